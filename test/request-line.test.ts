import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import pino from 'pino'
import { generateApiKey } from '../src/auth/api-key.ts'
import { type RequestLine, requestLineWriter } from '../src/http/request-line.ts'

/** A writer at info to an array of lines, with pino's usual base bindings (pid, hostname). */
function capturedWriter() {
  const lines: string[] = []
  const logger = pino({ level: 'info' }, { write: (text: string) => void lines.push(text) })
  const write = requestLineWriter(logger, 'info')
  assert.ok(write)
  return { lines, write, logger }
}

const anyText = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('a"b', 'c\\d', 'é 🐕'))
const requestLine: fc.Arbitrary<RequestLine> = fc.record({
  reqId: fc.uuid(),
  bindings: fc.constant(undefined),
  method: fc.constantFrom('GET', 'POST', 'HEAD'),
  url: anyText,
  operation: fc.constantFrom('listPets', 'getPet', 'createPet', '/healthz'),
  status: fc.constantFrom(200, 201, 401, 404, 503),
  durationMs: fc.double({ min: 0, max: 1e7, noNaN: true }),
  key: fc.option(fc.constantFrom('ops', 'web.front-1'), { nil: undefined }),
  remoteAddress: fc.option(fc.oneof(fc.ipV4(), fc.ipV6(), anyText), { nil: undefined }),
  userAgent: fc.option(anyText, { nil: undefined }),
})

// A listing's line with no optional field.
const A_LISTING: RequestLine = {
  reqId: 'r-1',
  bindings: undefined,
  method: 'GET',
  url: '/v1/pets',
  operation: 'listPets',
  status: 200,
  durationMs: 1,
  key: undefined,
  remoteAddress: undefined,
  userAgent: undefined,
}

describe('the request line', () => {
  test('when any request is written, then the line is one JSON object with its fields as given, the time of its writing, the duration to the hundredth', () => {
    const { lines, write } = capturedWriter()
    fc.assert(
      fc.property(requestLine, (line) => {
        lines.length = 0
        const before = Date.now()
        write(line)
        const after = Date.now()
        assert.equal(lines.length, 1)
        const text = lines[0] as string
        assert.ok(text.endsWith('}\n'), text)
        const parsed = JSON.parse(text)
        assert.ok(
          parsed.time >= before && parsed.time <= after,
          `time ${parsed.time}, written in [${before}, ${after}]`,
        )
        const rounded = Math.round(line.durationMs * 100) / 100
        assert.ok(text.includes(`"durationMs":${rounded},`) || text.includes(`"durationMs":${rounded}}`))
        assert.deepEqual(
          { ...parsed, time: 0, pid: 0, hostname: '' },
          {
            level: 30,
            time: 0,
            pid: 0,
            hostname: '',
            reqId: line.reqId,
            method: line.method,
            url: line.url,
            operation: line.operation,
            status: line.status,
            durationMs: rounded,
            ...(line.key === undefined ? {} : { key: line.key }),
            ...(line.remoteAddress === undefined ? {} : { remoteAddress: line.remoteAddress }),
            ...(line.userAgent === undefined ? {} : { userAgent: line.userAgent }),
            msg: 'request',
          },
        )
      }),
      { numRuns: 2000 },
    )
  })

  test('when a key comes as the client address, the key name or a later binding, then the line masks it', () => {
    const { lines, write } = capturedWriter()
    const key = generateApiKey()
    write({
      ...A_LISTING,
      bindings: `,"reqId":"r-1","condition":"${key}"`,
      key,
      remoteAddress: `${key}, 203.0.113.7`,
    })
    assert.equal(lines.join('').includes(key.slice(4)), false, lines.join(''))
    const parsed = JSON.parse(lines[0] as string)
    assert.equal(parsed.remoteAddress, 'psk_[redacted], 203.0.113.7')
    assert.equal(parsed.key, 'psk_[redacted]')
    assert.equal(parsed.condition, 'psk_[redacted]')
  })

  test('when the duration is not a plain non-negative number, then the line is still JSON, with a duration of 0', () => {
    const { lines, write } = capturedWriter()
    for (const durationMs of [Number.NaN, -0.5, Number.POSITIVE_INFINITY, 1e300]) {
      lines.length = 0
      write({ ...A_LISTING, durationMs })
      assert.equal(JSON.parse(lines[0] as string).durationMs, 0, `${durationMs}: ${lines[0]}`)
    }
  })

  test('when the clock reads any time, then the line carries it exactly, leading zeros of its last digits included', (t) => {
    const { lines, write } = capturedWriter()
    t.mock.timers.enable({ apis: ['Date'], now: 0 })
    for (const now of [0, 5, 999_999, 1_000_000, 1_700_000_000_000, 1_700_000_000_007, 1_700_000_100_000]) {
      t.mock.timers.setTime(now)
      lines.length = 0
      write(A_LISTING)
      const text = lines[0] as string
      assert.ok(text.startsWith(`{"level":30,"time":${now},"pid":`), text)
      assert.equal(JSON.parse(text).time, now)
    }
  })

  test('when the process logger gains a binding, then the lines written after it carry it', (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 1_700_000_000_000 })
    const { lines, write, logger } = capturedWriter()
    write(A_LISTING)
    logger.setBindings({ region: 'eu-1' })
    write(A_LISTING)
    assert.equal(JSON.parse(lines[0] as string).region, undefined)
    assert.equal(JSON.parse(lines[1] as string).region, 'eu-1')
  })
})
