/**
 * A response header for an operation's documentation. `@fastify/swagger` cannot mark a response header
 * required, so required ones carry `x-required`, which `openapi.ts` turns into OpenAPI's `required: true`.
 */
export function responseHeader(description: string, options: { required?: boolean; format?: string } = {}) {
  return {
    type: 'string',
    description,
    ...(options.format ? { format: options.format } : {}),
    ...(options.required === false ? {} : { 'x-required': true }),
  }
}

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
