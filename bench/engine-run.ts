import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { recordFixture } from './baseline-fixture.ts'
import { type BaselineProcess, startBaseline } from './baseline-process.ts'
import { type CollectionsSeen, watchCollections } from './collection-watch.ts'
import { engineVersion, freshDatabaseUrl } from './engines.ts'
import type { LoadResult } from './load.ts'
import { runLoad } from './load-runner.ts'
import type { BenchOptions, EngineName } from './options.ts'
import { checkParity } from './parity-check.ts'
import { onExit } from './processes.ts'
import { buildScenario, READ_SCENARIOS, type ScenarioContext, spreadPetIds } from './scenarios.ts'
import { type ServiceProcess, seedPets, startService } from './service-process.ts'
import { type EngineRun, type ScenarioRuns, TARGETS, type Target } from './summary.ts'
import { TURN_PAUSE_MS } from './turns.ts'

const COLLECTIONS_READ_MS = 10_000
// Each of a heap capture's two sampling profiles: long enough for a slow process's many scavenges.
const HEAP_SAMPLE_S = 10

const newApiKey = () => `psk_${randomBytes(32).toString('base64url')}`

function progress(engine: EngineName, text: string): void {
  process.stderr.write(`[${engine}] ${text}\n`)
}

function describeRun(result: LoadResult): string {
  const { p50, p99 } = result.latencyMs
  const statuses = Object.entries(result.statusCounts)
    .map(([status, count]) => `${status}×${count}`)
    .join(' ')
  const socket = result.socketErrors ? `, ${result.socketErrors} socket errors` : ''
  const cpu = result.serverCpuUsPerRequest.toFixed(1)
  const fixed = result.fixedRate
  const atFixed = fixed ? `; at ${fixed.ratePerS} req/s, p99 ${fixed.latencyMs.p99} ms` : ''
  return `${Math.round(result.requestsPerSecond)} req/s, p50 ${p50} ms, p99 ${p99} ms, ${cpu} µs CPU per request (${statuses}${socket})${atFixed}`
}

/** Seeds a fresh store, starts the service and the baseline, and measures every scenario on both. */
export async function runEngine(engine: EngineName, options: BenchOptions): Promise<EngineRun> {
  const directory = mkdtempSync(join(tmpdir(), `petstore-bench-${engine}-`))
  onExit(() => rmSync(directory, { recursive: true, force: true }))
  const databaseUrl = await freshDatabaseUrl(engine, directory)
  progress(engine, `seeding ${options.pets} pets`)
  await seedPets(databaseUrl, options.pets, directory)

  const context: ScenarioContext = {
    apiKey: newApiKey(),
    wrongKey: newApiKey(),
    petIds: spreadPetIds(options.pets),
  }
  let service: ServiceProcess | undefined
  let logsOff: ServiceProcess | undefined
  let pipeLog: ServiceProcess | undefined
  const baselines: BaselineProcess[] = []
  let watch: ReturnType<typeof watchCollections> | undefined
  const serviceOptions = {
    databaseUrl,
    apiKey: context.apiKey,
    cwd: directory,
    extraEnv: options.serviceEnv,
    nodeFlags: options.nodeFlags,
    logSink: options.logSinks[0] ?? 'file',
  }
  try {
    // Started once and stopped first, as any deployment's earlier start would have: the measured process
    // then finds its modules in the compile cache, as every start but a fresh install's first does.
    progress(engine, 'warming the compile cache (one start and stop)')
    await (await startService(serviceOptions)).stop()
    service = await startService({ ...serviceOptions, stdoutCopy: options.serviceStdout })
    if (options.logSinks.length > 1) {
      pipeLog = await startService({ ...serviceOptions, logSink: 'pipe' })
    }
    if (options.logsOff) {
      logsOff = await startService({
        ...serviceOptions,
        extraEnv: { ...options.serviceEnv, LOG_LEVEL: 'warn' },
      })
    }
    // Each serving process's collections from its own metrics, every 10 s as a scraper would read them:
    // a process whose scavenges turned slow is seen in the report (and captured with --heap-watch).
    const serving = { service, 'pipe-log': pipeLog, 'logs-off': logsOff }
    watch = watchCollections(
      Object.entries(serving).flatMap(([name, server]) =>
        server === undefined ? [] : [{ name, ...server }],
      ),
      {
        intervalMs: COLLECTIONS_READ_MS,
        heapDir: options.heapWatch,
        sampleS: HEAP_SAMPLE_S,
        report: (text) => progress(engine, text),
      },
    )
    const fixture = await recordFixture(service.origin, context, options.pets)
    const fastify = await startBaseline('fastify', fixture, context.apiKey, directory)
    baselines.push(fastify)
    const baseline = await startBaseline('baseline', fixture, context.apiKey, directory)
    baselines.push(baseline)
    const scenarios = options.scenarios.map((name) => buildScenario(name, context))
    await checkParity(service.origin, baseline.origin, scenarios)
    await checkParity(service.origin, fastify.origin, scenarios)

    const servers: Partial<Record<Target, { origin: string; pid: number; collectLog?: () => void }>> = {
      service,
      ...(pipeLog ? { 'pipe-log': pipeLog } : {}),
      fastify,
      baseline,
      ...(logsOff ? { 'logs-off': logsOff } : {}),
    }
    // Each target measured, in the order of a round's first turn, with its server.
    const measured = TARGETS.flatMap((target) => {
      const server = servers[target]
      return server === undefined ? [] : [{ target, server }]
    })
    const loadTargets = measured.map(({ server }) => ({ origin: server.origin, serverPid: server.pid }))
    const results: ScenarioRuns[] = scenarios.map((scenario) => ({
      scenario: scenario.name,
      runs: { service: [], 'pipe-log': [], 'logs-off': [], fastify: [], baseline: [] },
    }))
    let responses = 0
    for (let round = 1; round <= options.rounds; round++) {
      for (const [index, scenario] of scenarios.entries()) {
        // Every target in short turns within one load process: the host's noise hits all alike.
        const roundResults = await runLoad({
          targets: loadTargets,
          requests: scenario.requests,
          expectedStatuses: scenario.expectedStatuses,
          connections: options.connections,
          warmupS: options.warmupS,
          durationS: options.durationS,
          sliceS: options.sliceS,
          pauseMs: TURN_PAUSE_MS,
          fixedRateShare: READ_SCENARIOS.includes(scenario.name) ? options.fixedRateShare : 0,
        })
        if (roundResults.length !== measured.length) {
          throw new Error(`load generator gave ${roundResults.length} results for ${measured.length} targets`)
        }
        for (const [at, { target, server }] of measured.entries()) {
          const result = roundResults[at] as LoadResult
          // A file sink is read only now, after the round's load, so no reader competes with a measured server.
          server.collectLog?.()
          if (target === 'service') responses += result.totalRequests
          results[index]?.runs[target].push(result)
          progress(
            engine,
            `round ${round}/${options.rounds} ${scenario.name} ${target}: ${describeRun(result)}`,
          )
        }
      }
    }
    const collections: CollectionsSeen[] = await watch.stop()
    watch = undefined
    return {
      engine,
      engineVersion: await engineVersion(engine, databaseUrl),
      collections,
      scenarios: results,
      servicePeakRssKiB: service.peakRssKiB(),
      serviceLogSink: serviceOptions.logSink,
      serviceLogBytesPerResponse: service.logBytes() / responses,
      serviceLog: service.logged() + (pipeLog?.logged() ?? '') + (logsOff?.logged() ?? ''),
    }
  } finally {
    await watch?.stop()
    for (const baseline of baselines) await baseline.stop()
    await logsOff?.stop()
    await pipeLog?.stop()
    await service?.stop()
    rmSync(directory, { recursive: true, force: true })
  }
}
