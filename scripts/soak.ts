/**
 * A bounded soak: the service (as `npm start` runs it, on a fresh SQLite file) under a steady mixed load
 * for a while, sampling its memory, open files and WAL size, to show nothing grows without bound.
 * `npm run soak -- --duration 3600` runs an hour and writes docs/soak.md; test/soak.test.ts runs a short
 * one in CI and checks the same bounds.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { spawnTracked, stopChild } from '../bench/processes.ts'
import { startCommand, startCommandArgs, waitUntilListening } from '../bench/service-process.ts'
import { freePort } from '../test/helpers/free-port.ts'
import { growthOf, MiB, type SoakGrowth, type SoakSample, sampleProcess } from './soak-samples.ts'

const FULL_COLLECTIONS = fileURLToPath(new URL('./full-collections.mjs', import.meta.url))

export interface SoakOptions {
  durationS: number
  /** Requests per second, spread over the clients. */
  rate: number
  /** Seconds at the start not judged (JIT, caches and pools fill). */
  warmupS: number
  sampleEveryS: number
  /** Stops the service (SIGSTOP) for `forS` s, `everyS` s after the load or the last stop: a stalled machine. */
  pause?: { everyS: number; forS: number }
}

export interface SoakResult {
  options: SoakOptions
  requests: number
  /** Responses with a status the request did not expect, and requests that got no answer. */
  errors: number
  /** The errors by request and what it got (`GET /v1/pets/{id} → 500`, `POST /v1/pets → TimeoutError`). */
  failures: Record<string, number>
  /** Answers 503 with Retry-After (the service shedding load), each sent again after it. */
  shed: number
  statuses: Record<string, number>
  samples: SoakSample[]
  /** Heap in use right after each full (mark-compact) collection: the live heap, garbage excluded. */
  majorGcs: Array<{ atS: number; heapAfterMiB: number }>
  /**
   * After warm-up: growth of the heap floor (lowest heap used, last third against first third), RSS, open
   * files and WAL; and of the live heap after full collections, when at least two happened after warm-up.
   */
  growth: SoakGrowth
}

// How many times one request is sent again after being shed, and the share of requests that may be shed.
const SHED_RETRIES = 3
export const SHED_BOUND = 0.01

function isShed(response: Response): boolean {
  return response.status === 503 && response.headers.has('retry-after')
}

export async function runSoak(
  options: SoakOptions,
  log: (line: string) => void = () => {},
): Promise<SoakResult> {
  const directory = mkdtempSync(join(tmpdir(), 'petstore-soak-'))
  const key = `psk_${randomBytes(32).toString('base64url')}`
  const [port, metricsPort] = [await freePort(), await freePort()]
  // --trace-gc: the heap after each full collection is the live heap, the one a leak makes grow; one is
  // forced every few seconds (full-collections.mjs), so every run has them.
  const collections = ['--expose-gc', `--import=${FULL_COLLECTIONS}`]
  const child = spawnTracked(
    undefined,
    process.execPath,
    ['--trace-gc', ...collections, ...startCommandArgs()],
    {
      cwd: directory,
      env: {
        PATH: process.env.PATH ?? '',
        ...startCommand().env,
        LOG_LEVEL: 'warn',
        PORT: String(port),
        METRICS_PORT: String(metricsPort),
        API_KEYS: `soak:${key}`,
        RATE_LIMIT_PER_MINUTE: '0',
        // A small read cache fills during warm-up, so growth after it is not the cache (bounded anyway) but a leak.
        READ_CACHE_BYTES: String(MiB),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const started = performance.now()
  const elapsedS = () => (performance.now() - started) / 1000
  const majorGcs: SoakResult['majorGcs'] = []
  let pending = ''
  child.stdout?.on('data', (chunk) => {
    const lines = (pending + chunk).split('\n')
    pending = lines.pop() ?? ''
    for (const line of lines) {
      const after = / Mark-Compact [\d.]+ \([\d.]+\) -> ([\d.]+) /.exec(line)?.[1]
      if (after !== undefined) majorGcs.push({ atS: elapsedS(), heapAfterMiB: Number(after) })
    }
  })
  let stderr = ''
  child.stderr?.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-10_000)
  })
  const origin = `http://127.0.0.1:${port}`
  const walPath = join(directory, 'data', 'petstore.db-wal')
  try {
    await waitUntilListening(`${origin}/healthz`, child, () => stderr)
    const statuses: Record<string, number> = {}
    let requests = 0
    let errors = 0
    let shed = 0
    const failures: Record<string, number> = {}
    const failed = (what: string) => {
      errors++
      failures[what] = (failures[what] ?? 0) + 1
    }
    const ids: string[] = []
    let cursor: string | undefined
    const headers = { authorization: `Bearer ${key}` }

    // One request of the mix: 40 % list, 20 % walk by cursor, 20 % get, 20 % create.
    const one = async (n: number) => {
      const kind = n % 5
      let url = `${origin}/v1/pets?limit=20`
      let init: RequestInit = { headers }
      let expected = 200
      let request = 'GET /v1/pets?limit=20'
      if (kind === 1) {
        url = `${origin}/v1/pets?limit=50&status=sold${cursor ? `&cursor=${cursor}` : ''}`
        request = 'GET /v1/pets?limit=50&status=sold&cursor'
      }
      if (kind === 2 && ids.length > 0) {
        url = `${origin}/v1/pets/${ids[n % ids.length]}`
        request = 'GET /v1/pets/{id}'
      }
      if (kind === 3) {
        url = `${origin}/v1/pets`
        request = 'POST /v1/pets'
        expected = 201
        const body = JSON.stringify({ name: `Soak ${n}`, categoryId: n, status: n % 2 ? 'sold' : 'pending' })
        init = { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body }
      }
      try {
        const send = () => fetch(url, { ...init, signal: AbortSignal.timeout(5000) })
        let response = await send()
        // A shed request (503 with Retry-After, refused before any work is done) is sent again when the
        // header says, as a client should: a stall of a busy machine is not the service losing a request.
        for (let retry = 1; retry <= SHED_RETRIES && isShed(response); retry++) {
          statuses[503] = (statuses[503] ?? 0) + 1
          shed++
          await response.arrayBuffer()
          await sleep(Number(response.headers.get('retry-after')) * 1000)
          response = await send()
        }
        const text = await response.text()
        statuses[response.status] = (statuses[response.status] ?? 0) + 1
        if (response.status !== expected) failed(`${request} → ${response.status}`)
        if (expected === 201 && ids.length < 10_000) ids.push(/"id":(\d+)/.exec(text)?.[1] ?? '1')
        if (kind === 1) cursor = /[?&]cursor=([^&>]+)/.exec(response.headers.get('link') ?? '')?.[1]
      } catch (error) {
        const { name, cause } = error as Error & { cause?: { code?: string } }
        failed(`${request} → ${name}${cause?.code ? ` ${cause.code}` : ''}`)
      }
      requests++
    }

    const samples: SoakSample[] = []
    const loadStarted = elapsedS()
    let sampling = true
    const sampler = (async () => {
      while (sampling) {
        const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text())
        const sample = sampleProcess(child.pid as number, metrics, walPath, elapsedS())
        samples.push(sample)
        log(
          `${sample.atS.toFixed(0).padStart(5)} s  rss ${sample.rssMiB.toFixed(1)} MiB  heap ${sample.heapUsedMiB.toFixed(1)} MiB  files ${sample.openFiles}  sockets ${sample.sockets}  wal ${sample.walMiB.toFixed(2)} MiB  requests ${requests}  errors ${errors}`,
        )
        await sleep(options.sampleEveryS * 1000)
      }
    })()

    // A fixed rate, in ticks of 50 ms: steady load, not as much as the machine can take.
    const perTick = Math.max(1, Math.round(options.rate / 20))
    let n = 0
    const { pause } = options
    const paused = (async () => {
      while (pause && elapsedS() - loadStarted + pause.everyS < options.durationS) {
        await sleep(pause.everyS * 1000)
        child.kill('SIGSTOP')
        await sleep(pause.forS * 1000)
        child.kill('SIGCONT')
      }
    })()
    while (elapsedS() - loadStarted < options.durationS) {
      const tick = sleep(50)
      await Promise.all(Array.from({ length: perTick }, () => one(n++)))
      await tick
    }
    sampling = false
    await Promise.all([sampler, paused])

    const judged = samples.filter((sample) => sample.atS >= loadStarted + options.warmupS)
    const judgedGcs = majorGcs.filter((gc) => gc.atS >= loadStarted + options.warmupS)
    const growth: SoakResult['growth'] = growthOf(judged)
    const [firstGc, lastGc] = [judgedGcs[0], judgedGcs.at(-1)]
    if (judgedGcs.length >= 2 && firstGc && lastGc)
      growth.liveHeapMiB = lastGc.heapAfterMiB - firstGc.heapAfterMiB
    return { options, requests, errors, failures, shed, statuses, samples, majorGcs, growth }
  } finally {
    await stopChild(child)
    rmSync(directory, { recursive: true, force: true })
  }
}

/**
 * Bounds a soak must stay within after warm-up (documented in docs/reliability.md). The heap floor also
 * rises with garbage that no full collection has reclaimed yet, so its bound is loose; the live heap after
 * full collections is the tight one, once a run is long enough to have them.
 */
export const SOAK_BOUNDS = { liveHeapMiB: 8, heapFloorMiB: 32, rssMiB: 48, openFiles: 8, walMiB: 8 }

export function soakViolations(result: SoakResult): string[] {
  const violations: string[] = []
  if (result.errors > 0) {
    const what = Object.entries(result.failures).map(([failure, count]) => `${count} × ${failure}`)
    violations.push(`${result.errors} errors: ${what.join(', ')}`)
  }
  if (result.shed > result.requests * SHED_BOUND)
    violations.push(`${result.shed} of ${result.requests} requests shed (bound ${SHED_BOUND * 100} %)`)
  for (const [name, bound] of Object.entries(SOAK_BOUNDS) as Array<[keyof typeof SOAK_BOUNDS, number]>) {
    const grown = result.growth[name]
    if (grown !== undefined && grown > bound)
      violations.push(`${name} grew ${grown.toFixed(2)} (bound ${bound})`)
  }
  return violations
}

function markdown(result: SoakResult, command: string): string {
  const { options, growth } = result
  const rows = result.samples
    .filter((_, index, all) => all.length <= 40 || index % Math.ceil(all.length / 40) === 0)
    .map(
      (s) =>
        `| ${s.atS.toFixed(0)} | ${s.rssMiB.toFixed(1)} | ${s.heapUsedMiB.toFixed(1)} | ${s.openFiles} | ${s.sockets} | ${s.walMiB.toFixed(2)} |`,
    )
  const violations = soakViolations(result)
  return `# Soak

Generated by \`${command}\` (scripts/soak.ts) on ${new Date().toISOString()}; run it again rather than edit.

- ${options.durationS} s at ${options.rate} requests/s (40 % list, 20 % cursor walk by status, 20 % get, 20 % create),
  SQLite, the service as \`npm start\` runs it, with a full collection forced every 3 s (the live heap is
  measured after each); samples every ${options.sampleEveryS} s; the first ${options.warmupS} s are warm-up.
- Requests: ${result.requests.toLocaleString('en-US')}; statuses ${JSON.stringify(result.statuses)}; shed and sent again
  after Retry-After ${result.shed}; errors ${result.errors}${result.errors > 0 ? ` (${JSON.stringify(result.failures)})` : ''}.
- Growth after warm-up (last third against first third): heap floor ${growth.heapFloorMiB.toFixed(2)} MiB,
  RSS peak ${growth.rssMiB.toFixed(1)} MiB, open files other than sockets ${growth.openFiles}, WAL ${growth.walMiB.toFixed(2)} MiB;
  live heap after full collections ${growth.liveHeapMiB === undefined ? 'not measured (fewer than two full collections after warm-up)' : `${growth.liveHeapMiB.toFixed(2)} MiB over ${result.majorGcs.length} full collections`}.
- Bounds: ${Object.entries(SOAK_BOUNDS)
    .map(([name, bound]) => `${name} ≤ ${bound}`)
    .join(
      ', ',
    )}, zero errors, at most ${SHED_BOUND * 100} % of requests shed — ${violations.length === 0 ? '**held**' : `**broken**: ${violations.join('; ')}`}.

| s | RSS MiB | heap used MiB | open files (no sockets) | sockets | WAL MiB |
| ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}
`
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '600' },
      rate: { type: 'string', default: '1000' },
      output: { type: 'string', default: 'docs/soak.md' },
    },
  })
  const durationS = Number(values.duration)
  const options = {
    durationS,
    rate: Number(values.rate),
    warmupS: Math.min(60, Math.round(durationS / 5)),
    sampleEveryS: Math.max(2, Math.round(durationS / 300)),
  }
  const result = await runSoak(options, (line) => process.stderr.write(`${line}\n`))
  const command = `npm run soak -- --duration ${values.duration} --rate ${values.rate}`
  writeFileSync(fileURLToPath(new URL(`../${values.output}`, import.meta.url)), markdown(result, command))
  const violations = soakViolations(result)
  process.stdout.write(
    `${violations.length === 0 ? 'bounds held' : violations.join('\n')}\nWritten to ${values.output}\n`,
  )
  process.exit(violations.length === 0 ? 0 : 1)
}
