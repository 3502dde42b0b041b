import assert from 'node:assert/strict'
import { OpenApiConformance } from './openapi-conformance.ts'
import { type RawResponse, rawHttp } from './raw-http.ts'

const documents = new Map<string, Promise<OpenApiConformance>>()

/**
 * The OpenAPI document served at `origin` (a test server or a `petstore serve` process), fetched once per
 * origin. Call it early in a test whose server will stop answering later (a shutdown, an outage).
 */
export function conformanceAt(origin: string): Promise<OpenApiConformance> {
  let conformance = documents.get(origin)
  if (conformance === undefined) {
    conformance = fetch(`${origin}/v1/openapi.json`)
      .then((response) => response.json())
      .then((document) => new OpenApiConformance(document))
    // A failed fetch is not kept: the next check asks again.
    conformance.catch(() => documents.delete(origin))
    documents.set(origin, conformance)
  }
  return conformance
}

/**
 * `fetch` for tests that call the service directly: the response is checked against the served OpenAPI
 * document (declared status, content type, body schema, required headers) before it is returned, unread.
 */
export async function checkedFetch(origin: string, path: string, init: RequestInit = {}): Promise<Response> {
  const response = await fetch(`${origin}${path}`, init)
  await checkResponse(origin, {
    method: init.method ?? 'GET',
    path,
    status: response.status,
    headers: response.headers,
    text: await response.clone().text(),
  })
  return response
}

/** Checks one response observed some other way (a raw socket) against the document served at `origin`. */
export async function checkResponse(
  origin: string,
  observed: { method: string; path: string; status: number; headers: Headers; text: string },
): Promise<void> {
  ;(await conformanceAt(origin)).check(observed)
}

/** Checks a `rawHttp` response to `method path` (as sent on the request line) against the document. */
export async function checkRawResponse(
  origin: string,
  method: string,
  path: string,
  response: RawResponse,
): Promise<RawResponse> {
  await checkResponse(origin, {
    method,
    path,
    status: response.status,
    headers: new Headers(response.headers),
    text: response.body,
  })
  return response
}

/** Splits raw HTTP/1.1 response text (one response, Content-Length framed) and checks it. */
export async function checkRawText(origin: string, method: string, path: string, raw: string): Promise<void> {
  const headEnd = raw.indexOf('\r\n\r\n')
  const [statusLine = '', ...lines] = raw.slice(0, headEnd).split('\r\n')
  const headers = new Headers()
  for (const line of lines)
    headers.append(line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim())
  const status = Number(statusLine.split(' ')[1])
  await checkResponse(origin, { method, path, status, headers, text: raw.slice(headEnd + 4) })
}

/**
 * Sends `request` as raw bytes (`rawHttp`: what fetch refuses to send) and checks the answer against the
 * document for the method and target of its request line.
 */
export async function checkedRawHttp(origin: string, request: string): Promise<RawResponse> {
  const [method = '', target = ''] = request.slice(0, request.indexOf('\r\n')).split(' ')
  return checkRawResponse(origin, method, target, await rawHttp(origin, request))
}

/**
 * What every answer carries, those the parser's errors make on the raw socket included: the date (RFC
 * 9110 §6.6.1), the request id, no sniffing, no caching.
 */
export function assertHeadersOfEveryAnswer(headers: Record<string, string>): void {
  const date = Date.parse(headers.date ?? '')
  assert.ok(Math.abs(Date.now() - date) < 60_000, `Date: ${headers.date}`)
  assert.match(headers['x-request-id'] ?? '', /^[\w.:-]{1,128}$/)
  assert.equal(headers['x-content-type-options'], 'nosniff')
  assert.equal(headers['cache-control'], 'no-store')
}

/** The Error body in `text`: exactly its three fields, with the status and code expected. */
export function assertErrorBody(text: string, status: number, code: string): { message: string } {
  const body = JSON.parse(text)
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status'])
  assert.equal(body.status, status)
  assert.equal(body.code, code)
  return body
}
