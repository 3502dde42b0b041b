import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import pino from 'pino'
import { generateApiKey } from '../src/auth/api-key.ts'
import { failingStore } from './helpers/abuse-cases.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { logLines, requesterFor, startServeProcess, waitForLog } from './helpers/cli-process.ts'
import { startTestServer } from './helpers/test-server.ts'

const key = generateApiKey()
const PROBES = ['/healthz', '/readyz', '/healthz', '/readyz', '/healthz']

/** A logger at `level` whose lines are kept, parsed. */
function capturingLogger(level: string) {
  const lines: Array<Record<string, unknown>> = []
  const logger = pino({ level }, { write: (line: string) => void lines.push(JSON.parse(line)) })
  return { logger, lines }
}

describe('health probes in the request log', () => {
  test('when LOG_LEVEL is info, then five probes write no request line while a pet request does', async (t) => {
    const server = await startServeProcess({ API_KEYS: `ops:${key}` }, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const call = requesterFor(key)
    const probeIds: string[] = []
    for (const path of PROBES) {
      const id = randomUUID()
      probeIds.push(id)
      assert.equal((await call(server, path, { headers: { 'x-request-id': id } })).status, 200, path)
    }
    const petId = randomUUID()
    assert.equal((await call(server, '/v1/pets', { headers: { 'x-request-id': petId } })).status, 200)
    // The pet's line comes after every probe's would have: once it is there, none of theirs will be.
    await waitForLog(server, (lines) => lines.find((line) => line.reqId === petId && line.msg === 'request'))
    const probeLines = logLines(server).filter((line) => probeIds.includes(String(line.reqId)))
    assert.deepEqual(probeLines, [])
  })

  test('when LOG_LEVEL is debug, then each probe has its request line at debug', async (t) => {
    const { logger, lines } = capturingLogger('debug')
    const server = await startTestServer(t, { app: { logger } })
    for (const path of PROBES) assert.equal((await fetch(`${server.origin}${path}`)).status, 200)
    await fetch(`${server.origin}/v1/pets`, { headers: { authorization: `Bearer ${server.key}` } })
    const requestLines = lines.filter((line) => line.msg === 'request')
    assert.deepEqual(
      requestLines.map(({ operation, level }) => `${operation} ${level}`),
      [...PROBES.map((path) => `${path} 20`), 'listPets 30'],
    )
  })

  test('when readiness fails at info, then its probes write no request line and the failure is logged at warn', async (t) => {
    const { logger, lines } = capturingLogger('info')
    const store = failingStore('schemaStatus', new Error('connection refused'))
    const server = await startTestServer(t, { store, app: { logger } })
    for (let i = 0; i < 3; i++) assert.equal((await fetch(`${server.origin}/readyz`)).status, 503)
    assert.deepEqual(
      lines.filter((line) => line.msg === 'request'),
      [],
    )
    const warnings = lines.filter((line) => line.level === 40).map((line) => String(line.msg))
    assert.ok(
      warnings.some((message) => message.startsWith('not ready: the store cannot be reached')),
      `the condition is logged: ${JSON.stringify(warnings)}`,
    )
  })
})
