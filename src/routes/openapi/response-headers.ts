/**
 * The form of a documented response header's value: a length bound and a pattern, format or list of values,
 * so clients (and linters) know exactly what to expect. Tests check every header they see against it.
 */
export type HeaderValue =
  | { enum: readonly string[] }
  | { maxLength: number; pattern: string }
  | { maxLength: number; format: string }

/**
 * A response header for an operation's documentation. `@fastify/swagger` cannot mark a response header
 * required, so required ones carry `x-required`, which `openapi.ts` turns into OpenAPI's `required: true`.
 */
export function responseHeader(
  description: string,
  value: HeaderValue,
  options: { required?: boolean } = {},
) {
  return {
    type: 'string',
    description,
    ...value,
    ...(options.required === false ? {} : { 'x-required': true }),
  }
}

/** Whole seconds (RFC 9110 delay-seconds), as Retry-After and the RateLimit fields write them. */
export const SECONDS: HeaderValue = { maxLength: 10, pattern: '^[0-9]{1,10}$' }

// A URL the service writes from its public base URL. Node does not bound response headers, but proxies and
// clients refuse header sections over 8 KiB, so no working deployment sends a longer one.
export const URL_MAX_LENGTH = 8192

/** A `Link` header (RFC 8288) with one link of relation `rel`. */
export function linkHeader(rel: string): HeaderValue {
  return { maxLength: URL_MAX_LENGTH, pattern: `^<[^>]+>; rel="${rel}"$` }
}

export const URL_REFERENCE: HeaderValue = { maxLength: URL_MAX_LENGTH, format: 'uri-reference' }

/** Moves every `x-required` of a response header schema up to the header object, as OpenAPI wants it. */
export function markRequiredHeaders(document: { paths?: Record<string, Record<string, unknown>> }): void {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations) as Array<{ responses?: Record<string, unknown> }>) {
      for (const response of Object.values(operation.responses ?? {}) as Array<{ headers?: object }>) {
        for (const header of Object.values(response.headers ?? {}) as Array<Record<string, unknown>>) {
          const schema = header.schema as Record<string, unknown> | undefined
          if (schema?.['x-required']) {
            header.required = true
            delete schema['x-required']
          }
        }
      }
    }
  }
}

/** On every answer, the HTTP layer's own included (request-id.ts, `requestIdOf`). */
export const REQUEST_ID_HEADER = responseHeader(
  "The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds " +
    'no API key, else a new one. It names the request in the log; quote it when reporting a problem.',
  { maxLength: 128, pattern: '^[A-Za-z0-9._:-]{1,128}$' },
)
