import assert from 'node:assert/strict'
import { Ajv2020 } from 'ajv/dist/2020.js'

interface OpenApiDocument {
  paths: Record<string, Record<string, { responses: Record<string, ResponseObject> }>>
  components: { schemas: Record<string, unknown> }
}

interface ResponseObject {
  content?: Record<string, { schema: { $ref?: string } }>
  headers?: Record<string, { required?: boolean; schema?: object }>
}

// Headers a response may carry only where the document says so: the rate-limit fields, Retry-After and the
// deprecation announcement are what clients act on, so an answer that sends one undocumented is a gap.
const DOCUMENTED_WHEN_SENT = [
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'retry-after',
  'deprecation',
  'sunset',
]
// Sent on the raw socket's answers too, which the document gives no headers (error-responses.ts, RAW_SOCKET).
const DOCUMENTED_WHEN_SENT_WITH_HEADERS = ['cache-control', 'x-content-type-options']

export interface ObservedResponse {
  method: string
  path: string
  status: number
  headers: Headers
  text: string
}

/**
 * Checks every observed response against the served OpenAPI document: the status is declared for the
 * operation, the body is JSON matching the declared schema, and required headers are there. Responses to
 * paths or methods the document does not have must still be the Error body.
 */
export class OpenApiConformance {
  readonly #document: OpenApiDocument
  readonly #ajv = new Ajv2020({
    strict: false,
    allErrors: true,
    formats: { int64: true, int32: true, 'uri-reference': true },
  })
  readonly #templates: Array<{ template: string; pattern: RegExp }>

  constructor(document: unknown) {
    this.#document = document as OpenApiDocument
    this.#ajv.addSchema(document as object, 'openapi')
    this.#templates = Object.keys(this.#document.paths).map((template) => ({
      template,
      pattern: new RegExp(`^/v1${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
    }))
  }

  operation(method: string, path: string) {
    // Methods are case-sensitive (RFC 9110 §9.1): a lowercase `get` is no GET, and no operation.
    if (method !== method.toUpperCase()) return undefined
    const template = this.#templates.find(({ pattern }) => pattern.test(path))?.template
    const operation =
      template === undefined ? undefined : this.#document.paths[template]?.[method.toLowerCase()]
    return operation === undefined ? undefined : { template, operation }
  }

  #validate(schema: object, value: unknown, what: string) {
    const valid = this.#ajv.validate(schema, value)
    assert.ok(valid, `${what} does not match the OpenAPI document: ${this.#ajv.errorsText(this.#ajv.errors)}`)
  }

  check({ method, path, status, headers, text }: ObservedResponse): void {
    const what = `${method} ${path} → ${status}`
    if (method === 'HEAD' || status === 304) {
      this.#checkWithoutBody(method, path, status, headers, what)
      return
    }
    const contentType = headers.get('content-type') ?? ''
    assert.match(contentType, /^application\/json(;|$)/, `${what}: content-type is ${contentType}`)
    const body: unknown = JSON.parse(text)
    if (status >= 400) {
      this.#validate({ $ref: 'openapi#/components/schemas/Error' }, body, `${what} body`)
      assert.equal(
        (body as { status: number }).status,
        status,
        `${what}: Error.status differs from the HTTP status`,
      )
    }
    if (status === 401)
      assert.match(headers.get('www-authenticate') ?? '', /^Bearer /, `${what}: WWW-Authenticate`)
    const found = this.operation(method, path.split('?')[0] ?? '')
    if (found === undefined) return
    const declared = this.#declared(found, method, status, what)
    const schema = declared.content?.['application/json']?.schema
    assert.ok(schema, `${what}: no application/json schema declared`)
    const ref = schema.$ref?.replace(/^#/, 'openapi#')
    this.#validate(ref === undefined ? schema : { $ref: ref }, body, `${what} body`)
    this.#checkHeaders(declared, headers, what)
  }

  #declared(
    found: NonNullable<ReturnType<OpenApiConformance['operation']>>,
    method: string,
    status: number,
    what: string,
  ) {
    const declared = found.operation.responses[String(status)]
    assert.ok(declared, `${what}: status ${status} is not declared for ${method} ${found.template}`)
    return declared
  }

  /** Required headers are there, every documented header sent has the documented form, and none is missing. */
  #checkHeaders(declared: ResponseObject, headers: Headers, what: string): void {
    const documented = Object.entries(declared.headers ?? {})
    for (const [name, header] of documented) {
      const value = headers.get(name)
      if (value === null) {
        assert.ok(!header.required, `${what}: the document requires a ${name} header, the response has none`)
      } else if (header.schema) this.#validate(header.schema, value, `${what}: header ${name} (${value})`)
    }
    const names = new Set(documented.map(([name]) => name.toLowerCase()))
    const checked = [...DOCUMENTED_WHEN_SENT, ...(declared.headers ? DOCUMENTED_WHEN_SENT_WITH_HEADERS : [])]
    for (const name of checked) {
      if (headers.has(name))
        assert.ok(names.has(name), `${what}: sends ${name}, which the document does not list`)
    }
  }

  /** HEAD answers as GET would, without the body; a 304 has none either: status and headers are checked. */
  #checkWithoutBody(method: string, path: string, status: number, headers: Headers, what: string): void {
    const asMethod = method === 'HEAD' ? 'GET' : method
    const found = this.operation(asMethod, path.split('?')[0] ?? '')
    if (found === undefined) return
    this.#checkHeaders(this.#declared(found, asMethod, status, what), headers, what)
  }
}
