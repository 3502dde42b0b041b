import cluster, { type Worker } from 'node:cluster'
import { setTimeout as sleep } from 'node:timers/promises'
import { AggregatorRegistry } from 'prom-client'
import { provisionKeys } from '../auth/provision-keys.ts'
import type { CommandIo } from '../commands/command.ts'
import type { Config } from '../config.ts'
import { createLogger, wantsPrettyLogs } from '../logger.ts'
import { startMetricsServer } from '../metrics/metrics-server.ts'
import { embeddedDataDirectory, openStore } from '../store/open-store.ts'

// A worker that dies is replaced after a pause that grows with repeated crashes, so a worker that cannot
// start does not spin the CPU.
const RESTART_DELAY_MS = [100, 500, 1000, 5000]
const STABLE_AFTER_MS = 30_000

/**
 * The supervisor of WORKERS processes sharing one port (node:cluster). It prepares the store once
 * (migrations, first key) before any worker starts, serves the workers' metrics summed, replaces a worker
 * that dies, and on SIGTERM/SIGINT asks every worker to drain, waits for them, and exits.
 */
export async function runPrimary(config: Config, workers: number, { stdout }: CommandIo): Promise<number> {
  const log = createLogger(config, wantsPrettyLogs(config, stdout))
  const store = openStore(config, log)
  try {
    await store.migrate()
    await provisionKeys({
      store,
      config,
      log,
      dataDirectory: embeddedDataDirectory(config),
      terminal: stdout,
    })
  } finally {
    await store.close()
  }

  const aggregator = new AggregatorRegistry()
  const metricsServer =
    config.METRICS === 'on'
      ? await startMetricsServer(
          { contentType: aggregator.contentType, metrics: () => aggregator.clusterMetrics() },
          config.METRICS_HOST,
          config.METRICS_PORT,
        )
      : undefined

  let stopping = false
  const crashes: number[] = []
  const fork = () => {
    const worker = cluster.fork()
    worker.on('exit', (code, signal) => onExit(worker, code, signal))
  }
  const onExit = async (worker: Worker, code: number | null, signal: string | null) => {
    if (stopping) return
    const now = Date.now()
    crashes.push(now)
    const recent = crashes.filter((at) => now - at < STABLE_AFTER_MS).length
    const delay = RESTART_DELAY_MS[Math.min(recent, RESTART_DELAY_MS.length) - 1] ?? 5000
    log.error({ worker: worker.process.pid, code, signal, restartInMs: delay }, 'a worker died; replacing it')
    await sleep(delay)
    if (!stopping) fork()
  }
  for (let i = 0; i < workers; i++) fork()
  log.info(
    { workers, metricsPort: (metricsServer?.address() as { port?: number } | null)?.port },
    'supervising workers',
  )

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return
    stopping = true
    log.info({ signal }, 'stopping workers')
    const running = Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined)
    const exits = running.map((worker) => new Promise((resolve) => worker.once('exit', resolve)))
    for (const worker of running) worker.process.kill('SIGTERM')
    Promise.all(exits).then(() => {
      metricsServer?.close()
      process.exit(0)
    })
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  return 0
}
