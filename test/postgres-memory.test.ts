import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { describe, test } from 'node:test'
import { promisify } from 'node:util'
import { emptyDatabase } from './helpers/postgres-store-fixtures.ts'
import { engineSuiteOptions, postgresEngine } from './helpers/store-engines.ts'

const BATCHES = 1000

/** Scavenges and the bytes they promoted to the old generation from `from` on (`--trace-gc-nvp`'s lines). */
function promotedSince(gcLines: string, from: number): { bytes: number; scavenges: number } {
  let bytes = 0
  let scavenges = 0
  for (const line of gcLines.split('\n')) {
    const at = Number(/\s(\d+) ms: /.exec(line)?.[1])
    if (!line.includes(' gc=s ') || !(at >= from)) continue
    scavenges++
    bytes += Number(/ promoted=(\d+)/.exec(line)?.[1])
  }
  return { bytes, scavenges }
}

describe('PostgreSQL creates, in memory', engineSuiteOptions(postgresEngine), () => {
  test('when batches of creates are committed, then their objects die young: next to nothing per create reaches the old generation', {
    timeout: 60_000,
  }, async () => {
    const url = await emptyDatabase()
    // The young generation npm start gives the service; 1,100 durable commits, which the disk paces (a
    // failed run rejects with its stderr).
    const run = await promisify(execFile)(
      process.execPath,
      [
        '--max-semi-space-size=16',
        '--trace-gc-nvp',
        'test/helpers/postgres-create-batches.ts',
        url,
        `${BATCHES}`,
      ],
      { encoding: 'utf8', timeout: 50_000, maxBuffer: 64 * 1024 * 1024 },
    )
    const from = Number(/measured from ([\d.]+)/.exec(run.stderr)?.[1])
    const { bytes, scavenges } = promotedSince(run.stdout, from)
    assert.ok(scavenges >= 20, `only ${scavenges} scavenges while measuring`)
    // Kept alive into the old generation, a create's statement values, messages and rows came to about
    // 300 bytes (docs/decisions.md, "PostgreSQL statements die young"); dying young, to a few.
    const perCreate = bytes / (BATCHES * 32)
    assert.ok(perCreate < 50, `${perCreate.toFixed(0)} bytes promoted per create in ${scavenges} scavenges`)
  })
})
