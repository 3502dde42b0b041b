import assert from 'node:assert/strict'
import type { IncomingMessage } from 'node:http'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import pino from 'pino'
import { generateApiKey } from '../src/auth/api-key.ts'
import type { AccessLine } from '../src/http/access-line.ts'
import { requestIdOf } from '../src/http/request-id.ts'
import { A_LISTING, anyText, capturedWriter, copyOf, requestLine } from './helpers/access-line-cases.ts'

describe('the access line', () => {
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
            ...(line.code === undefined ? {} : { code: line.code }),
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

  test('when a key comes as the client address, the key name, a later binding or one of the process, then the line masks it', () => {
    const { lines, write, logger } = capturedWriter()
    const key = generateApiKey()
    logger.setBindings({ token: key })
    write({ ...A_LISTING })
    write({
      ...A_LISTING,
      bindings: `,"reqId":"r-1","condition":"${key}"`,
      key,
      remoteAddress: `${key}, 203.0.113.7`,
    })
    assert.equal(lines.join('').includes(key.slice(4)), false, lines.join(''))
    assert.equal(JSON.parse(lines[0] as string).token, 'psk_[redacted]')
    const parsed = JSON.parse(lines[1] as string)
    assert.equal(parsed.remoteAddress, 'psk_[redacted], 203.0.113.7')
    assert.equal(parsed.key, 'psk_[redacted]')
    assert.equal(parsed.condition, 'psk_[redacted]')
  })

  test('when consecutive requests share their address, their user agent, both or neither, then each line ends with its own', () => {
    const { lines, write } = capturedWriter()
    const ends: Array<Pick<AccessLine, 'remoteAddress' | 'userAgent'>> = [
      { remoteAddress: '203.0.113.7', userAgent: 'curl/8.5.0' },
      { remoteAddress: '203.0.113.7', userAgent: 'curl/8.5.0' },
      { remoteAddress: '203.0.113.7', userAgent: 'undici' },
      { remoteAddress: '198.51.100.2', userAgent: 'undici' },
      { remoteAddress: '198.51.100.2', userAgent: undefined },
      { remoteAddress: undefined, userAgent: undefined },
      { remoteAddress: undefined, userAgent: 'a "quoted" agent' },
      { remoteAddress: '203.0.113.7', userAgent: 'curl/8.5.0' },
    ]
    for (const end of ends) write({ ...A_LISTING, ...end })
    assert.deepEqual(
      lines.map((line) => {
        const { remoteAddress, userAgent } = JSON.parse(line)
        return { remoteAddress, userAgent }
      }),
      ends,
    )
  })

  test('when the same client sends a key in its user agent, a long user agent or an address to escape on consecutive requests, then each line masks, cuts and escapes it', (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 1_700_000_000_000 })
    const { lines, write } = capturedWriter()
    const key = generateApiKey()
    const ends: Array<Pick<AccessLine, 'remoteAddress' | 'userAgent'>> = [
      { remoteAddress: '203.0.113.7', userAgent: `tool/1.0 (${key})` },
      { remoteAddress: '203.0.113.7', userAgent: 'a'.repeat(300) },
      { remoteAddress: '"quoted" é', userAgent: 'é 🐕' },
    ]
    for (const end of ends) {
      for (const copy of [
        end,
        { remoteAddress: copyOf(end.remoteAddress), userAgent: copyOf(end.userAgent) },
      ])
        write({ ...A_LISTING, ...copy })
    }
    assert.equal(lines.length, 6)
    for (let at = 0; at < 6; at += 2) assert.equal(lines[at + 1], lines[at])
    assert.equal(lines.join('').includes(key.slice(4)), false)
    assert.equal(JSON.parse(lines[0] as string).userAgent, 'tool/1.0 (psk_[redacted])')
    assert.equal(JSON.parse(lines[2] as string).userAgent, `${'a'.repeat(256)}…`)
    assert.deepEqual(JSON.parse(lines[4] as string).remoteAddress, '"quoted" é')
    assert.deepEqual(JSON.parse(lines[4] as string).userAgent, 'é 🐕')
  })

  test('when the duration is not a plain non-negative number, then the line is still JSON, with a duration of 0', () => {
    const { lines, write } = capturedWriter()
    for (const durationMs of [Number.NaN, -0.5, Number.POSITIVE_INFINITY, 1e300]) {
      lines.length = 0
      write({ ...A_LISTING, durationMs })
      assert.equal(JSON.parse(lines[0] as string).durationMs, 0, `${durationMs}: ${lines[0]}`)
    }
  })

  test('when a duration is short or long, then it is written as String() writes it rounded to the hundredth', () => {
    const { lines, write } = capturedWriter()
    const durations = [
      0, 0.004, 0.005, 0.01, 0.1, 0.996, 1, 1.05, 9.99, 9.994, 9.995, 10, 10.1, 123.456, 99999.999,
    ]
    for (const durationMs of durations) {
      lines.length = 0
      write({ ...A_LISTING, durationMs })
      const expected = String(Math.round(durationMs * 100) / 100)
      assert.ok((lines[0] as string).includes(`"durationMs":${expected},`), `${durationMs}: ${lines[0]}`)
    }
  })

  test('when a client sends any X-Request-Id, then the id kept is one the line may write as it is: its own when plain, 1–128 characters and holding no key', () => {
    const { lines, write } = capturedWriter()
    // Any text, text of the id's characters and some others, and plain ids around the 128 kept at most.
    const anyHeader = fc.oneof(
      anyText,
      fc.stringMatching(/^[A-Za-z0-9._:"\\ -]{1,130}$/),
      fc.stringMatching(/^[A-Za-z0-9._:-]{120,136}$/),
    )
    fc.assert(
      fc.property(anyHeader, (given) => {
        const reqId = requestIdOf({ headers: { 'x-request-id': given } } as unknown as IncomingMessage)
        assert.match(reqId, /^[A-Za-z0-9._:-]{1,128}$/)
        // The client's own, as the README says, when plain, short and holding no key.
        if (/^[A-Za-z0-9._:-]{1,128}$/.test(given) && !given.includes('psk_')) assert.equal(reqId, given)
        lines.length = 0
        write({ ...A_LISTING, reqId })
        assert.equal(JSON.parse(lines[0] as string).reqId, reqId)
      }),
      { numRuns: 1000 },
    )
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

describe('the access line against pino', () => {
  // Request ids as requestIdOf keeps them; a request bound more than its id, sometimes (a 503's condition).
  const asPinoWrites = fc.record({
    line: requestLine.map((line) => ({ ...line, key: line.key === 'caisse-é 🐕' ? 'ops' : line.key })),
    reqId: fc.oneof(fc.uuid(), fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/)),
    condition: fc.option(anyText, { nil: undefined }),
    now: fc.integer({ min: 0, max: 4_102_444_800_000 }),
  })

  test('when any request is written at any time, then the line is byte for byte the one pino writes for its fields', (t) => {
    const { lines, write, logger } = capturedWriter()
    t.mock.timers.enable({ apis: ['Date'], now: 0 })
    fc.assert(
      fc.property(asPinoWrites, ({ line, reqId, condition, now }) => {
        t.mock.timers.setTime(now)
        const child = logger.child(condition === undefined ? { reqId } : { reqId, condition })
        const bindings =
          condition === undefined
            ? undefined
            : (child as unknown as Record<symbol, string>)[pino.symbols.chindingsSym]
        lines.length = 0
        write({ ...line, reqId, bindings })
        const { method, url, operation, status, code, key, remoteAddress, userAgent } = line
        child.info(
          {
            method,
            url,
            operation,
            status,
            durationMs: Math.round(line.durationMs * 100) / 100,
            ...(code === undefined ? {} : { code }),
            ...(key === undefined ? {} : { key }),
            ...(remoteAddress === undefined ? {} : { remoteAddress }),
            ...(userAgent === undefined ? {} : { userAgent }),
          },
          'request',
        )
        assert.equal(lines[0], lines[1])
      }),
      { numRuns: 3000 },
    )
  })

  test('when the clock moves on, stands still or goes back, by any step, then each line carries the time of its writing', (t) => {
    const { lines, write } = capturedWriter()
    t.mock.timers.enable({ apis: ['Date'], now: 0 })
    const step = fc.oneof(fc.integer({ min: -2500, max: 2500 }), fc.constantFrom(0, 1, 999, 1000, -1))
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e15 + 5000 }),
        fc.array(step, { minLength: 1, maxLength: 50 }),
        (first, moves) => {
          let now = first
          for (const move of moves) {
            now = Math.max(0, now + move)
            t.mock.timers.setTime(now)
            lines.length = 0
            write(A_LISTING)
            assert.ok(
              (lines[0] as string).startsWith(`{"level":30,"time":${now},"pid":`),
              `${now}: ${lines[0]}`,
            )
          }
        },
      ),
      { numRuns: 500 },
    )
  })
})
