import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { bearerCheck, KEPT_CREATES } from './baseline-common.ts'
import type { BaselineFixture, RecordedResponse } from './baseline-fixture.ts'

/**
 * The baseline: what the machine does with no framework, no validation and no store — bare node:http
 * answering from memory with the service's own recorded bytes. The service's req/s divided by this one's
 * is the share of the hardware's HTTP capacity the service keeps.
 *
 * Usage: node bench/baseline-server.ts <fixture.json>, key in BENCH_API_KEY; prints `listening <port>`.
 */

interface Reply {
  status: number
  headers: Record<string, string>
  body: Buffer
}

const BODY_LIMIT = 4096

const fixture = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8')) as BaselineFixture
const carriesKey = bearerCheck(process.env.BENCH_API_KEY ?? '')
const toReply = (recorded: RecordedResponse): Reply => ({
  status: recorded.status,
  headers: recorded.headers,
  body: Buffer.from(recorded.bodyBase64, 'base64'),
})
const replies = new Map(Object.entries(fixture.responses).map(([url, recorded]) => [url, toReply(recorded)]))
const unauthorized = toReply(fixture.unauthorized)
// A create's headers as the service sends them (its request id, RateLimit fields…), but for Location.
const { location: _location, ...createdHeaders } = fixture.created.headers
const created: unknown[] = new Array(KEPT_CREATES)
let nextId = fixture.nextId

function send(response: ServerResponse, reply: Reply): void {
  response.writeHead(reply.status, { ...reply.headers, 'content-length': reply.body.length })
  response.end(reply.body)
}

function sendError(response: ServerResponse, status: number, code: string, message: string): void {
  const body = Buffer.from(JSON.stringify({ code, message, status }))
  send(response, { status, headers: { 'content-type': 'application/json; charset=utf-8' }, body })
}

function create(request: IncomingMessage, response: ServerResponse): void {
  const chunks: Buffer[] = []
  let size = 0
  request.on('data', (chunk: Buffer) => {
    size += chunk.length
    if (size <= BODY_LIMIT) chunks.push(chunk)
  })
  request.on('end', () => {
    if (size > BODY_LIMIT) return sendError(response, 413, 'body_too_large', 'body over 4096 bytes')
    let input: { name?: unknown; categoryId?: unknown; status?: unknown }
    try {
      input = JSON.parse(Buffer.concat(chunks).toString('utf8'))
    } catch {
      return sendError(response, 400, 'malformed_json', 'the body is not valid JSON')
    }
    const id = nextId++
    const pet = { id, name: input.name, categoryId: input.categoryId, status: input.status }
    created[id % KEPT_CREATES] = pet
    send(response, {
      status: 201,
      headers: { ...createdHeaders, location: `/v1/pets/${id}` },
      body: Buffer.from(JSON.stringify(pet)),
    })
  })
}

// The service's own server option (app.ts): a baseline without it would count it as the service's gain.
const server = createServer({ optimizeEmptyRequests: true }, (request, response) => {
  if (!carriesKey(request.headers.authorization)) {
    // Drain any body first, as the service does, so the connection stays usable.
    request.resume()
    return send(response, unauthorized)
  }
  if (request.method === 'POST' && request.url === '/v1/pets') {
    return create(request, response)
  }
  const reply = request.method === 'GET' ? replies.get(request.url ?? '') : undefined
  if (reply === undefined) return sendError(response, 404, 'route_not_found', 'not in the baseline')
  send(response, reply)
})

let port = 0
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  port = typeof address === 'object' && address ? address.port : 0
  process.stdout.write(`listening ${port}\n`)
})
process.once('SIGTERM', () => {
  server.close(() => process.exit(0))
  // Load-generator connections are kept alive; they would hold close() open until they time out.
  server.closeAllConnections()
})
