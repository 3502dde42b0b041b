import assert from 'node:assert/strict'
import fc from 'fast-check'
import pino from 'pino'
import { type AccessLine, accessLineWriter } from '../../src/http/access-line.ts'

/** A writer at info to an array of lines, with pino's usual base bindings (pid, hostname). */
export function capturedWriter() {
  const lines: string[] = []
  const logger = pino({ level: 'info' }, { write: (text: string) => void lines.push(text) })
  const write = accessLineWriter(logger, 'info')
  assert.ok(write)
  return { lines, write, logger }
}

export const anyText = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('a"b', 'c\\d', 'é 🐕'),
)
export const requestLine: fc.Arbitrary<AccessLine> = fc.record({
  reqId: fc.uuid(),
  bindings: fc.constant(undefined),
  method: fc.constantFrom('GET', 'POST', 'HEAD'),
  url: anyText,
  operation: fc.constantFrom('listPets', 'getPet', 'createPet', '/healthz'),
  status: fc.constantFrom(200, 201, 401, 404, 503),
  code: fc.option(fc.constantFrom('unauthorized', 'invalid_query', 'rate_limited'), { nil: undefined }),
  // Any double, and durations in whole hundredths as clocks give them (1.5, 0.07, 12).
  durationMs: fc.oneof(
    fc.double({ min: 0, max: 1e7, noNaN: true }),
    fc.integer({ min: 0, max: 1_000_000 }).map((hundredths) => hundredths / 100),
  ),
  key: fc.option(fc.constantFrom('ops', 'web.front-1', 'caisse-é 🐕'), { nil: undefined }),
  remoteAddress: fc.option(fc.oneof(fc.ipV4(), fc.ipV6(), anyText), { nil: undefined }),
  userAgent: fc.option(anyText, { nil: undefined }),
})

/** A new string of the same text, as the next request's header is (undefined stays undefined). */
export const copyOf = (text: string | undefined) => (text === undefined ? undefined : text.split('').join(''))

// A listing's line with no optional field.
export const A_LISTING: AccessLine = {
  reqId: 'r-1',
  bindings: undefined,
  method: 'GET',
  url: '/v1/pets',
  operation: 'listPets',
  status: 200,
  code: undefined,
  durationMs: 1,
  key: undefined,
  remoteAddress: undefined,
  userAgent: undefined,
}
