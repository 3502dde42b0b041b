import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { FastifyBaseLogger } from 'fastify'
import pino, { type Logger } from 'pino'
import { lazyLogger, serializedBindingsOf } from '../src/http/lazy-logger.ts'
import { createLogger } from '../src/log/logger.ts'
import { failingStore } from './helpers/abuse-cases.ts'
import { call } from './helpers/api-client.ts'
import { startTestServer } from './helpers/test-server.ts'

/** A pino logger at `level` whose lines are kept, parsed, in `lines`, counting every child made of it. */
function capturingLogger(level: string): {
  logger: Logger
  lines: Array<Record<string, unknown>>
  children: () => number
} {
  const lines: Array<Record<string, unknown>> = []
  let made = 0
  // pino calls onChild for every child made, its children's children too.
  const logger = pino(
    { level, onChild: () => made++ },
    { write: (line: string) => void lines.push(JSON.parse(line)) },
  )
  return { logger, lines, children: () => made }
}

/** A request's logger as the service has it: Fastify's logger of the one it is given, then its child. */
const requestLoggerOf = (parent: Logger, bindings: Record<string, unknown>) =>
  lazyLogger(parent).child({}, {}).child(bindings, {})

describe('lazy logger', () => {
  test('when a request logs at an enabled level, then the line carries its bindings and the message', () => {
    const { logger, lines } = capturingLogger('info')
    const log = requestLoggerOf(logger, { reqId: 'r-1' })
    log.info({ status: 200 }, 'request')
    log.warn('slow')
    assert.deepEqual(
      lines.map(({ reqId, status, msg, level }) => ({ reqId, status, msg, level })),
      [
        { reqId: 'r-1', status: 200, msg: 'request', level: 30 },
        { reqId: 'r-1', status: undefined, msg: 'slow', level: 40 },
      ],
    )
  })

  test('when a request only logs below the level, then nothing is written and no child logger is made', () => {
    const { logger, lines, children } = capturingLogger('warn')
    const log = requestLoggerOf(logger, { reqId: 'r-2' })
    const before = children()
    log.info('request')
    log.debug({ code: 'unauthorized' }, 'request refused')
    assert.equal(lines.length, 0)
    assert.equal(children(), before)
    log.error('failed')
    assert.equal(children(), before + 1, 'made on the first line that is written')
    log.error('again')
    assert.equal(children(), before + 1, 'and only once')
    assert.deepEqual(
      lines.map(({ reqId, msg }) => ({ reqId, msg })),
      [
        { reqId: 'r-2', msg: 'failed' },
        { reqId: 'r-2', msg: 'again' },
      ],
    )
  })

  test('when a request changes its level or makes a child, then both act on its own child logger', () => {
    const { logger, lines } = capturingLogger('warn')
    const log = requestLoggerOf(logger, { reqId: 'r-3' })
    assert.equal(log.level, 'warn')
    log.level = 'debug'
    log.debug('now written')
    log.child({ step: 'inner' }).info('inner line')
    assert.equal(logger.level, 'warn', 'the process logger keeps its level')
    assert.deepEqual(
      lines.map(({ reqId, step, msg }) => ({ reqId, step, msg })),
      [
        { reqId: 'r-3', step: undefined, msg: 'now written' },
        { reqId: 'r-3', step: 'inner', msg: 'inner line' },
      ],
    )
  })

  test('when fields are bound to a request, then its later lines carry them, whether its child logger was made before or after', () => {
    const { logger, lines } = capturingLogger('info')
    const early = requestLoggerOf(logger, { reqId: 'r-4' }) as unknown as Logger
    early.setBindings({ condition: 'the store is unavailable' })
    early.info('request')
    const late = requestLoggerOf(logger, { reqId: 'r-5' }) as unknown as Logger
    late.info('first')
    late.setBindings({ condition: 'the service is overloaded' })
    late.info('request')
    assert.deepEqual(
      lines.map(({ reqId, condition, msg }) => ({ reqId, condition, msg })),
      [
        { reqId: 'r-4', condition: 'the store is unavailable', msg: 'request' },
        { reqId: 'r-5', condition: undefined, msg: 'first' },
        { reqId: 'r-5', condition: 'the service is overloaded', msg: 'request' },
      ],
    )
  })

  test('when the service fails a request at level warn, then its error line carries the request id it answered with', async (t) => {
    const { logger, lines } = capturingLogger('warn')
    const store = failingStore('getPet', new Error('disk I/O error'))
    const server = await startTestServer(t, { store, app: { logger } })

    const refused = await call(server, 'GET', '/v1/pets', { key: 'nope' })
    assert.equal(refused.status, 401)
    assert.equal(lines.length, 0, 'a refused request logs at debug only')

    const failed = await call(server, 'GET', '/v1/pets/1')
    assert.equal(failed.status, 500)
    const line = lines.find((entry) => entry.msg === 'request failed')
    assert.ok(line, 'the failure is logged')
    assert.equal(line.reqId, failed.headers.get('x-request-id'))
    assert.equal(line.level, 50)
  })

  test('when the service answers requests, then no pino child is made for any of them unless it logs', async (t) => {
    const { logger, lines, children } = capturingLogger('warn')
    const server = await startTestServer(t, { app: { logger } })
    const before = children()
    for (let i = 0; i < 5; i++) assert.equal((await call(server, 'GET', '/v1/pets')).status, 200)
    assert.equal((await call(server, 'GET', '/v1/pets', { key: 'nope' })).status, 401)
    assert.equal(children(), before, 'requests that write nothing make no child logger')
    assert.equal(lines.length, 0)
  })

  test('when the service runs, then Fastify makes its request loggers with its own default factory, which checks nothing', async (t) => {
    const server = await startTestServer(t)
    assert.equal(server.app.childLoggerFactory.name, 'defaultChildLoggerFactory')
  })

  test("when a request logger's child is made, then it has the bindings pino would give it then, not the request's later ones", () => {
    const { logger, lines } = capturingLogger('info')
    const request = requestLoggerOf(logger, { reqId: 'r-11' }) as unknown as Logger
    const step = request.child({ step: 1 })
    request.setBindings({ late: true })
    step.info('inner')
    request.info('outer')
    assert.deepEqual(
      lines.map(({ reqId, step, late, msg }) => ({ reqId, step, late, msg })),
      [
        { reqId: 'r-11', step: 1, late: undefined, msg: 'inner' },
        { reqId: 'r-11', step: undefined, late: true, msg: 'outer' },
      ],
    )
  })

  test("when a request logger's child is bound a request id of its own, then its serialized bindings keep the request's", () => {
    const { logger } = capturingLogger('info')
    const request = requestLoggerOf(logger, { reqId: 'r-12' }) as unknown as Logger
    request.setBindings({ condition: 'the store is unavailable' })
    const inner = (request as unknown as FastifyBaseLogger).child({ reqId: 'r-13' })
    const root = (logger as unknown as Record<symbol, string>)[pino.symbols.chindingsSym]
    assert.equal(
      serializedBindingsOf(inner),
      `${root},"reqId":"r-12","condition":"the store is unavailable","reqId":"r-13"`,
    )
  })

  test("when Fastify logs a request, then the process logger's serializers shape it, not Fastify's own", async (t) => {
    const lines: Array<Record<string, unknown>> = []
    const logger = createLogger({ level: 'info' }, false, {
      write: (line: string) => void lines.push(JSON.parse(line)),
    })
    const server = await startTestServer(t, { app: { logger } })
    const request = {
      method: 'GET',
      url: '/v1/pets',
      ip: '192.0.2.1',
      host: 'example.test',
      socket: { remotePort: 4321 },
    }
    server.app.log.info({ req: request }, 'seen')
    const line = lines.find((entry) => entry.msg === 'seen')
    assert.deepEqual(line?.req, { method: 'GET', url: '/v1/pets', remoteAddress: '192.0.2.1' })
  })

  test('when a request is bound more than its id, at its start or later, then its serialized bindings carry every field as pino writes them', () => {
    const { logger } = capturingLogger('info')
    const root = (logger as unknown as Record<symbol, string>)[pino.symbols.chindingsSym]
    assert.equal(
      serializedBindingsOf(requestLoggerOf(logger, { reqId: 'r-6' })),
      undefined,
      'the id alone is left to the request line',
    )
    assert.equal(
      serializedBindingsOf(requestLoggerOf(logger, { reqId: 'r-7', tenant: 'a"b' })),
      `${root},"reqId":"r-7","tenant":"a\\"b"`,
    )
    assert.equal(
      serializedBindingsOf(requestLoggerOf(logger, { requestId: 'r-8' })),
      `${root},"requestId":"r-8"`,
    )
    const later = requestLoggerOf(logger, { reqId: 'r-9' }) as unknown as Logger
    later.setBindings({ condition: 'the store is unavailable' })
    assert.equal(
      serializedBindingsOf(later as unknown as FastifyBaseLogger),
      `${root},"reqId":"r-9","condition":"the store is unavailable"`,
    )
    const unusual = { reqId: 'r-10', count: 10n, nested: { at: [1, 'two'] } }
    assert.equal(
      serializedBindingsOf(requestLoggerOf(logger, unusual)),
      (logger.child(unusual) as unknown as Record<symbol, string>)[pino.symbols.chindingsSym],
      'values of any kind, as pino serializes them',
    )
  })
})
