import { OpenApiConformance } from './openapi-conformance.ts'
import type { TestServer } from './test-server.ts'

export interface ApiResponse {
  status: number
  headers: Headers
  /** The raw body: int64 values are compared on this, as JSON.parse would round them. */
  text: string
  // biome-ignore lint/suspicious/noExplicitAny: a parsed JSON body of any shape, asserted on by tests
  json: any
}

export interface RequestOptions {
  /** An object is sent as JSON; a string or bytes are sent as they are. */
  body?: unknown
  headers?: Record<string, string>
  /** The key to send as a bearer token; false sends no Authorization header. Default: the server's key. */
  key?: string | false
}

// Writes a bigint as the exact digits (JSON.rawJSON is in Node 24; TypeScript's lib does not have it yet).
const rawJson = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON

const documents = new WeakMap<TestServer, Promise<OpenApiConformance>>()

/** The document the server serves, fetched once per server. */
export function conformanceOf(server: TestServer): Promise<OpenApiConformance> {
  let conformance = documents.get(server)
  if (conformance === undefined) {
    conformance = fetch(`${server.origin}/v1/openapi.json`)
      .then((response) => response.json())
      .then((document) => new OpenApiConformance(document))
    documents.set(server, conformance)
  }
  return conformance
}

/**
 * Calls the server over HTTP and checks the response against the served OpenAPI document before returning
 * it, so every test that calls the API is also a conformance test.
 */
export async function call(server: TestServer, method: string, path: string, options: RequestOptions = {}) {
  const headers: Record<string, string> = { ...options.headers }
  const key = options.key === undefined ? server.key : options.key
  if (key !== false && headers.authorization === undefined) headers.authorization = `Bearer ${key}`
  let body: string | Uint8Array | undefined
  if (typeof options.body === 'string' || options.body instanceof Uint8Array) body = options.body
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body, (_k, v) => (typeof v === 'bigint' ? rawJson(`${v}`) : v))
  }
  if (body !== undefined && headers['content-type'] === undefined)
    headers['content-type'] = 'application/json'
  const response = await fetch(`${server.origin}${path}`, { method, headers, body })
  const text = await response.text()
  const observed = { method, path, status: response.status, headers: response.headers, text }
  ;(await conformanceOf(server)).check(observed)
  return { ...observed, json: text === '' ? undefined : JSON.parse(text) } satisfies ApiResponse
}
