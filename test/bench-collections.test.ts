import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { type CollectionsSeen, watchCollections } from '../bench/collection-watch.ts'
import { collectionsSection } from '../bench/collections-table.ts'
import { captureHeap } from '../bench/heap-capture.ts'
import { parseCollections } from '../bench/service-collections.ts'
import { startService } from '../bench/service-process.ts'
import type { EngineRun } from '../bench/summary.ts'
import { generateApiKey } from '../src/auth/api-key.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { type Cleanup, temporaryDirectory } from './helpers/cleanup.ts'
import { listeningPorts } from './helpers/process-sockets.ts'

const TWO_LISTENERS = `
const { createServer } = require('node:http')
const ports = []
for (let i = 0; i < 2; i++) {
  const server = createServer()
  server.listen(0, '127.0.0.1', () => {
    ports.push(server.address().port)
    if (ports.length === 2) console.log(ports.join(' '))
  })
}`

describe('the bench reads each serving process’s collections', () => {
  test('when a process listens on two ports, then both are found from /proc; once it has exited, none', async () => {
    const child = spawn(process.execPath, ['-e', TWO_LISTENERS], { stdio: ['ignore', 'pipe', 'inherit'] })
    const [chunk] = (await once(child.stdout, 'data')) as [Buffer]
    const ports = String(chunk).trim().split(' ').map(Number)
    assert.deepEqual(
      listeningPorts(child.pid as number),
      [...ports].sort((a, b) => a - b),
    )
    child.kill()
    await once(child, 'exit')
    assert.deepEqual(listeningPorts(child.pid as number), [])
  })

  test('when a metrics text shows the collections, then they are read as counts, seconds and bytes; when it shows none, then nothing is', () => {
    const text = [
      '# HELP nodejs_gc_duration_seconds Garbage collection duration by kind.',
      'process_resident_memory_bytes 125669376',
      'nodejs_gc_duration_seconds_sum{kind="minor"} 0.25',
      'nodejs_gc_duration_seconds_count{kind="minor"} 500',
      'nodejs_gc_duration_seconds_sum{kind="major"} 0.0625',
      'nodejs_gc_duration_seconds_count{kind="major"} 4',
    ].join('\n')
    assert.deepEqual(parseCollections(text), {
      scavenges: 500,
      scavengeSeconds: 0.25,
      majors: 4,
      majorSeconds: 0.0625,
      residentBytes: 125669376,
    })
    // A process that has not yet run a major collection has no line for it.
    assert.equal(parseCollections(text.split('\n').slice(0, 4).join('\n'))?.majors, 0)
    assert.equal(parseCollections('process_resident_memory_bytes 1\n'), undefined)
  })
})

async function benchService(t: Cleanup, cwd: string, name: string) {
  const service = await startService({
    databaseUrl: `sqlite:${join(cwd, `${name}.db`)}`,
    apiKey: generateApiKey(),
    cwd,
    extraEnv: {},
    // A young generation of 1 MiB: scavenges every few requests, so every short window has some.
    nodeFlags: ['--max-semi-space-size=1'],
    logSink: 'pipe',
  })
  t.after(() => service.stop())
  return { name, ...service }
}

/** Requests to each origin, one after another, until `until` settles. */
async function loadUntil(origins: string[], until: Promise<unknown>): Promise<void> {
  let done = false
  void until.finally(() => {
    done = true
  })
  await Promise.all(
    origins.map(async (origin) => {
      while (!done) await (await fetch(`${origin}/v1/openapi.json`)).arrayBuffer()
    }),
  )
}

describe('the bench’s watch on the serving processes’ collections', () => {
  test('when a service runs with its metrics on a port of its own choosing, then the watch reads its collections there: the many scavenges of its load', async (t) => {
    const cwd = temporaryDirectory(t)
    const service = await benchService(t, cwd, 'service')
    const watch = watchCollections([service], {
      intervalMs: 200,
      heapDir: undefined,
      sampleS: 1,
      report: () => {},
    })
    await loadUntil([service.origin], sleep(1500))
    const [seen] = await watch.stop()
    assert.equal(seen?.name, 'service')
    assert.ok(seen?.last !== undefined, 'read from its metrics listener')
    assert.ok(seen.last.scavenges > 10, `${seen.last.scavenges} scavenges under load with 1 MiB semi-spaces`)
    assert.ok(seen.last.scavengeSeconds > 0)
    assert.ok(seen.last.residentBytes > 10 * 1024 * 1024)
    assert.equal(seen.capture, undefined, 'no heap directory: nothing captured')
  })

  test('when a window’s scavenges are slow, then that process’s heap is captured (both profiles and a snapshot DevTools reads), then another’s beside it, and both serve on', async (t) => {
    const cwd = temporaryDirectory(t)
    // Not made yet: the watch makes it, as `--heap-watch scratch/heaps` on a fresh checkout needs.
    const heapDir = join(temporaryDirectory(t), 'heaps')
    const slow = await benchService(t, cwd, 'slow')
    const beside = await benchService(t, cwd, 'beside')
    const reports: string[] = []
    // Every window counts as slow here: the first one read has the first process captured.
    const watch = watchCollections([slow, beside], {
      intervalMs: 300,
      heapDir,
      sampleS: 1,
      slowScavengeMs: 0,
      minScavenges: 1,
      report: (text) => reports.push(text),
    })
    const stopped = (async () => {
      await waitUntil(
        () => reports.some((text) => /^beside: heap captured|could not be captured/.test(text)),
        () => `both captures end (told: ${reports.join('; ')})`,
        { timeoutMs: 45_000, everyMs: 100 },
      )
      return watch.stop()
    })()
    await loadUntil([slow.origin, beside.origin], stopped)
    const seen = await stopped
    assert.deepEqual(
      reports.filter((text) => text.includes('could not')),
      [],
    )
    const [first, second] = seen
    assert.match(first?.capture?.reason ?? '', /scavenges averaging [\d.]+ ms in the window ending at \d+ s/)
    assert.equal(second?.capture?.reason, "beside slow's slow window")
    for (const { capture } of seen) {
      assert.ok(capture !== undefined && !('failed' in capture))
      for (const profile of [capture.allocations, capture.live]) {
        const { head, samples } = JSON.parse(readFileSync(profile, 'utf8'))
        assert.ok(head.children.length > 0 && Array.isArray(samples), `${profile} is a sampling heap profile`)
      }
      const snapshot = JSON.parse(readFileSync(capture.snapshot, 'utf8'))
      assert.ok(snapshot.snapshot.node_count > 1000, 'a whole heap snapshot')
    }
    assert.deepEqual(readdirSync(heapDir).sort(), [
      `beside-${beside.pid}-allocations.heapprofile`,
      `beside-${beside.pid}-live.heapprofile`,
      `beside-${beside.pid}.heapsnapshot`,
      `slow-${slow.pid}-allocations.heapprofile`,
      `slow-${slow.pid}-live.heapprofile`,
      `slow-${slow.pid}.heapsnapshot`,
    ])
    for (const { origin } of [slow, beside])
      assert.equal((await fetch(`${origin}/v1/openapi.json`)).status, 200)
    // Each inspector was closed again: nothing listens on its port.
    await assert.rejects(fetch('http://127.0.0.1:9229/json/list'))
  })
})

describe('the bench report’s collections', () => {
  const collections = { scavenges: 400, scavengeSeconds: 0.2, majors: 0, majorSeconds: 0, residentBytes: 1 }
  const run = (seen: CollectionsSeen[]): EngineRun => ({
    engine: 'sqlite',
    engineVersion: 'SQLite 3',
    scenarios: [],
    servicePeakRssKiB: 1,
    serviceLogSink: 'file',
    serviceLogBytesPerResponse: 280,
    serviceLog: '',
    collections: seen,
  })

  test('when processes were watched, then each has its row: its means, its slowest window, and a capture or why there was none', () => {
    const section = collectionsSection([
      run([
        {
          name: 'service',
          last: collections,
          slowestWindow: { scavenges: 120, meanMs: 9.5, endS: 312.4 },
          capture: { reason: 'slow', allocations: 'a', live: 'l', snapshot: '/h/service-1.heapsnapshot' },
        },
        {
          name: 'logs-off',
          last: collections,
          slowestWindow: undefined,
          capture: { reason: 'beside', failed: 'no inspector' },
        },
        { name: 'pipe-log', last: undefined, slowestWindow: undefined, capture: undefined },
      ]),
    ])
    const rows = section.split('\n').filter((line) => line.startsWith('| SQLite'))
    assert.deepEqual(rows, [
      '| SQLite | service | 400 | 0.50 | 9.50 (120, ending at 312 s) | 0 | — | /h/service-1.heapsnapshot (slow) |',
      '| SQLite | logs-off | 400 | 0.50 | — | 0 | — | not captured: no inspector |',
      '| SQLite | pipe-log | no metrics listener |  |  |  |  |  |',
    ])
  })

  test('when no process was watched, then there is no section', () => {
    assert.equal(collectionsSection([run([])]), '')
  })
})

describe('the bench’s heap capture', () => {
  test('when another process’s inspector holds the port, then the capture fails naming it, and leaves that inspector open', async (t) => {
    const idle = ['-e', 'setInterval(() => {}, 1000)']
    const holder = spawn(process.execPath, ['--inspect=127.0.0.1:9229', ...idle], { stdio: 'ignore' })
    const target = spawn(process.execPath, idle, { stdio: 'ignore' })
    t.after(() => {
      holder.kill()
      target.kill()
    })
    const opened = () =>
      fetch('http://127.0.0.1:9229/json/list').then(
        () => true,
        () => false,
      )
    await waitUntil(opened, 'the holder’s inspector opens', { timeoutMs: 5000, everyMs: 50 })
    const prefix = join(temporaryDirectory(t), 'target')
    await assert.rejects(captureHeap(target.pid as number, prefix, 0.1), {
      message: `the inspector on 127.0.0.1:9229 is another process's (pid ${holder.pid}), not ${target.pid}'s`,
    })
    assert.equal((await fetch('http://127.0.0.1:9229/json/list')).status, 200)
  })
})
