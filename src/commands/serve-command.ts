import cluster from 'node:cluster'
import type { Server } from 'node:http'
import { flushCompileCache } from 'node:module'
import { availableParallelism } from 'node:os'
import { buildApp } from '../app.ts'
import { provisionKeys } from '../auth/provision-keys.ts'
import { runPrimary } from '../cluster/primary.ts'
import { shareMetricsWithPrimary } from '../cluster/worker-metrics.ts'
import { type Config, loadConfig } from '../config.ts'
import { createLogger, wantsPrettyLogs } from '../logger.ts'
import { createMetrics } from '../metrics/metrics.ts'
import { startMetricsServer } from '../metrics/metrics-server.ts'
import { connectRedis } from '../redis.ts'
import { startServer } from '../server.ts'
import { embeddedDataDirectory, openStore } from '../store/open-store.ts'
import { type Command, type CommandIo, parseCommandArgs } from './command.ts'
import { exitOnFatalFailure } from './fatal-failure.ts'

// After a fatal failure, the longest in-flight requests are given (SHUTDOWN_TIMEOUT_MS if shorter): the
// process is no longer trusted, and the sooner it exits, the sooner a fresh one serves in its place.
const FATAL_GRACE_MS = 5000

function workerCount(config: Config): number {
  return config.WORKERS === 'auto' ? availableParallelism() : Number(config.WORKERS)
}

/**
 * Serves in this process. Alone, it also prepares the store (migrations, first key) and serves metrics;
 * as a cluster worker, the primary has done both, and it hands its metrics to the primary's aggregator.
 * An uncaught exception or unhandled rejection stops it: drain as on SIGTERM, briefly, then exit 1.
 */
async function serveInProcess(config: Config, { stdout }: CommandIo): Promise<number> {
  const logger = createLogger(config, wantsPrettyLogs(config, stdout))
  const fatal = exitOnFatalFailure(logger, Math.min(config.SHUTDOWN_TIMEOUT_MS, FATAL_GRACE_MS))
  const alone = !cluster.isWorker
  const store = await openStore(config, logger)
  const redis = config.REDIS_URL ? await connectRedis(config.REDIS_URL, logger) : undefined
  const metrics = createMetrics(store.poolStats?.bind(store))
  let metricsServer: Server | undefined
  try {
    if (alone) await store.migrate()
    const app = await buildApp({ config, store, logger, metrics, ...(redis ? { redis } : {}) })
    if (alone) {
      const dataDirectory = embeddedDataDirectory(config)
      await provisionKeys({ store, config, log: app.log, dataDirectory, terminal: stdout })
    }
    const shared = alone ? undefined : shareMetricsWithPrimary(metrics.registry)
    metricsServer =
      alone && config.METRICS === 'on'
        ? await startMetricsServer(metrics.registry, config.METRICS_HOST, config.METRICS_PORT)
        : undefined
    // Every module serving needs is loaded by now: write the compile cache (when bin/petstore.js enabled it)
    // at once rather than at exit, so the next start finds it even if this process is killed. Before the
    // port opens: on a cold cache the write holds the loop for up to a second, which no client may see.
    flushCompileCache()
    const server = await startServer(app, config, async () => {
      metricsServer?.close()
      redis?.disconnect()
      await store.close()
    })
    // The supervisor keeps a worker's counts once it has gone; the final report adds those since the last scrape.
    fatal.stopWith(async () => {
      // A connection whose request ends during the drain is kept alive, and holds the exit for its
      // keep-alive timeout; closed as soon as it is idle instead.
      const closeIdle = setInterval(() => app.server.closeIdleConnections(), 100)
      try {
        await server.shutdown()
      } finally {
        clearInterval(closeIdle)
      }
      await shared?.reportFinal()
    })
    const metricsAddress = metricsServer?.address()
    const metricsNote =
      typeof metricsAddress === 'object' && metricsAddress ? `; metrics on port ${metricsAddress.port}` : ''
    const docsNote = config.DOCS === 'on' ? `; docs: ${server.url}/docs` : ''
    app.log.info(
      `serving ${server.url}/v1 (OpenAPI document: ${server.url}/v1/openapi.json${docsNote}${metricsNote})`,
    )
    return 0
  } catch (error) {
    metricsServer?.close()
    redis?.disconnect()
    await store.close()
    throw error
  }
}

export const serveCommand: Command = {
  name: 'serve',
  summary: 'Serve the API (the default command)',
  help: `Usage: petstore serve

Applies pending migrations, makes sure an API key exists (see README, "API keys"), and serves the API
under /v1 on HOST:PORT, with WORKERS processes (one per CPU with WORKERS=auto). Settings come from the
environment and from .env; see README, "Configuration". SIGTERM or SIGINT stops accepting, answers
every request already read (served if in flight, else 503 with Connection: close), commits pending
writes, closes the store and exits 0; exit 1 if that takes over SHUTDOWN_TIMEOUT_MS + 2 s, or after an
uncaught failure (see README, "Operating").`,
  async run(args, io) {
    parseCommandArgs(args, {})
    const config = loadConfig()
    const workers = workerCount(config)
    if (workers > 1 && cluster.isPrimary) return runPrimary(config, workers, io)
    return serveInProcess(config, io)
  },
}
