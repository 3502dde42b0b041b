import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import pino from 'pino'
import { type AccessLine, accessLineWriter } from '../src/http/access-line.ts'
import { escapeControls } from '../src/log/line-chunks.ts'
import { BufferedLogOutput } from '../src/log/log-output.ts'
import { A_LISTING, capturedWriter, copyOf, requestLine } from './helpers/access-line-cases.ts'
import { within } from './helpers/bounded-wait.ts'
import { outputFile } from './helpers/cleanup.ts'

describe("the access line on the service's own output", () => {
  test("when any request is written, then the output holds the same text as pino's destination gets (C1 controls and line separators escaped), a line all ASCII copied as it is", async (t) => {
    const { path, fd } = outputFile(t)
    const output = new BufferedLogOutput({ fd })
    let copied = 0
    const writeAscii = output.writeAscii.bind(output)
    output.writeAscii = (line) => {
      copied++
      return writeAscii(line)
    }
    const logger = pino({ level: 'info' }, output)
    const write = accessLineWriter(logger, 'info')
    assert.ok(write)
    const asString = capturedWriter()
    t.mock.timers.enable({ apis: ['Date'], now: 1_700_000_000_000 })
    const plainText = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/
    let plain = 0
    const check = (line: AccessLine) => {
      const before = copied
      write(line)
      // The line is made later; a flush makes it now.
      output.flush()
      asString.write(line)
      const fields = [line.url, line.remoteAddress ?? '', line.userAgent ?? '']
      if (fields.every((text) => plainText.test(text))) {
        plain++
        assert.equal(copied, before + 1, `copied: ${JSON.stringify(line)}`)
      } else assert.equal(copied, before, `encoded: ${JSON.stringify(line)}`)
    }
    // Each line twice, the second with its address and user agent as new strings of the same text, as the
    // next request of a connection has them: the second line's end is the one kept from the first.
    fc.assert(
      fc.property(requestLine, (line) => {
        check(line)
        check({ ...line, remoteAddress: copyOf(line.remoteAddress), userAgent: copyOf(line.userAgent) })
      }),
      { numRuns: 3000 },
    )
    // Bindings past ASCII: no line is copied as it is any more.
    logger.setBindings({ region: 'zürich' })
    asString.logger.setBindings({ region: 'zürich' })
    const before = copied
    write(A_LISTING)
    output.flush()
    asString.write(A_LISTING)
    assert.equal(copied, before)
    await within(new Promise<void>((resolve) => output.flush(resolve)), 5000, 'the flush never finished')
    assert.ok(plain > 100, `${plain} plain lines of 3000`)
    assert.deepEqual(readFileSync(path, 'utf8').split(/(?<=\n)/), asString.lines.map(escapeControls))
    assert.equal(JSON.parse(asString.lines.at(-1) as string).region, 'zürich')
  })

  test('when a line waits to be made while the clock moves on and the process logger gains a binding, then it carries the time and bindings of when it was taken', async (t) => {
    const { path, fd } = outputFile(t)
    const output = new BufferedLogOutput({ fd })
    const logger = pino({ level: 'info' }, output)
    const write = accessLineWriter(logger, 'info')
    assert.ok(write)
    t.mock.timers.enable({ apis: ['Date'], now: 1_700_000_000_000 })
    write({ ...A_LISTING, reqId: 'taken-first' })
    t.mock.timers.setTime(1_700_000_001_234)
    logger.setBindings({ region: 'north' })
    write({ ...A_LISTING, reqId: 'taken-after' })
    await within(new Promise<void>((resolve) => output.flush(resolve)), 5000, 'the flush never finished')
    const [first, after] = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    assert.deepEqual([first.reqId, first.time, first.region], ['taken-first', 1_700_000_000_000, undefined])
    assert.deepEqual([after.reqId, after.time, after.region], ['taken-after', 1_700_000_001_234, 'north'])
  })
})
