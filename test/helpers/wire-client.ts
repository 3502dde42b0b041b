import { connect } from 'node:net'

/** One request as it goes on the wire: nothing is normalised, encoded or checked on the way. */
export interface WireRequest {
  method: string
  /** The request-target, written as UTF-8 bytes exactly as given (`/v1/pets?limit=5`, `/v1/pets/%31`). */
  target: string
  /** Header lines in order; repeats are sent as repeats; a Buffer value goes out byte for byte. */
  headers?: Array<[string, string | Buffer]>
  body?: Buffer | string
  /** Send the body with `Transfer-Encoding: chunked` (two chunks) instead of `Content-Length`. */
  chunked?: boolean
}

export interface WireResponse {
  status: number
  headers: Headers
  /** Header lines as received, names lower-cased (repeats kept). */
  headerLines: Array<[string, string]>
  text: string
}

const CRLF = '\r\n'

/** The bytes of `request`, with `Host` and `Connection: close` added unless given. */
export function encodeRequest(request: WireRequest): Buffer {
  const body = request.body === undefined ? undefined : Buffer.from(request.body)
  const headers = [...(request.headers ?? [])]
  const has = (name: string) => headers.some(([n]) => n.toLowerCase() === name)
  if (!has('host')) headers.unshift(['Host', 'petstore.test'])
  if (!has('connection')) headers.push(['Connection', 'close'])
  let payload: Buffer[] = []
  if (body !== undefined && request.chunked) {
    headers.push(['Transfer-Encoding', 'chunked'])
    const half = Math.ceil(body.length / 2)
    for (const part of [body.subarray(0, half), body.subarray(half)]) {
      if (part.length > 0)
        payload.push(Buffer.from(`${part.length.toString(16)}${CRLF}`), part, Buffer.from(CRLF))
    }
    payload.push(Buffer.from(`0${CRLF}${CRLF}`))
  } else if (body !== undefined) {
    if (!has('content-length')) headers.push(['Content-Length', String(body.length)])
    payload = [body]
  }
  const head = [Buffer.from(`${request.method} ${request.target} HTTP/1.1${CRLF}`)]
  for (const [name, value] of headers)
    head.push(Buffer.from(`${name}: `), Buffer.from(value), Buffer.from(CRLF))
  head.push(Buffer.from(CRLF))
  return Buffer.concat([...head, ...payload])
}

function dechunk(bytes: Buffer): Buffer {
  const parts: Buffer[] = []
  let at = 0
  for (;;) {
    const lineEnd = bytes.indexOf(CRLF, at)
    if (lineEnd === -1) throw new Error('truncated chunked body')
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString('latin1'), 16)
    if (!Number.isFinite(size)) throw new Error('bad chunk size')
    if (size === 0) return Buffer.concat(parts)
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size))
    at = lineEnd + 2 + size + 2
  }
}

/** Parses the one response of a `Connection: close` exchange; throws on anything that is not exactly one. */
export function parseResponse(received: Buffer, method: string): WireResponse {
  let bytes = received
  // Interim answers (100 Continue) come first; the response is what follows them.
  while (/^HTTP\/1\.1 1\d\d /.test(bytes.subarray(0, 13).toString('latin1'))) {
    bytes = bytes.subarray(bytes.indexOf(`${CRLF}${CRLF}`) + 4)
  }
  const headEnd = bytes.indexOf(`${CRLF}${CRLF}`)
  if (headEnd === -1)
    throw new Error(`no complete response head: ${JSON.stringify(bytes.toString('latin1'))}`)
  const [statusLine = '', ...lines] = bytes.subarray(0, headEnd).toString('latin1').split(CRLF)
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1])
  if (!Number.isInteger(status)) throw new Error(`bad status line: ${JSON.stringify(statusLine)}`)
  const headerLines = lines.map((line): [string, string] => {
    const colon = line.indexOf(':')
    return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()]
  })
  const headers = new Headers()
  for (const [name, value] of headerLines) headers.append(name, value)
  const rest = bytes.subarray(headEnd + 4)
  let body: Buffer
  if (method === 'HEAD' || status === 304 || status === 204) body = Buffer.alloc(0)
  else if (/chunked/i.test(headers.get('transfer-encoding') ?? '')) body = dechunk(rest)
  else {
    const length = Number(headers.get('content-length') ?? rest.length)
    if (rest.length !== length)
      throw new Error(
        `${rest.length} body bytes after a Content-Length of ${length} (more than one response?)`,
      )
    body = rest
  }
  return { status, headers, headerLines, text: new TextDecoder().decode(body) }
}

/**
 * Sends `request` on a new connection and resolves with the one response the server wrote before closing
 * it. A reset after a complete response (the server answered early and closed, e.g. 413 before reading a
 * body) counts as that response.
 */
export function sendWire(origin: string, request: WireRequest, timeoutMs = 5000): Promise<WireResponse> {
  const { hostname, port } = new URL(origin)
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) })
    const chunks: Buffer[] = []
    let settled = false
    const finish = (error?: Error) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      if (error !== undefined && chunks.length === 0) return reject(error)
      try {
        resolve(parseResponse(Buffer.concat(chunks), request.method))
      } catch (parseError) {
        reject(parseError)
      }
    }
    const timer = setTimeout(
      () => finish(new Error(`no response within ${timeoutMs} ms to ${request.method} ${request.target}`)),
      timeoutMs,
    )
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', (error) => finish(error))
    socket.on('close', () => finish())
    socket.write(encodeRequest(request))
  })
}
