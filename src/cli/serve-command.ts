import cluster from 'node:cluster'
import type { Server } from 'node:http'
import { flushCompileCache } from 'node:module'
import { availableParallelism } from 'node:os'
import { resolve } from 'node:path'
import { isatty } from 'node:tty'
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { connectRedis } from '../admission/rate-limit/redis-connection.ts'
import type { Config, DatabaseSettings } from '../config.ts'
import { afterLogFlush } from '../log/logger.ts'
import { startServer } from '../server.ts'
import { postgresUrlOf } from '../setting-forms.ts'
import type { Store } from '../store/store.ts'
import { type Command, CommandError, type Output } from './command.ts'
import { parseCommandArgs } from './command-args.ts'
import { composeApp } from './compose-app.ts'
import { exitOnFatalFailure } from './fatal-failure.ts'
import { HeldFaultLines } from './held-fault-lines.ts'
import { namingListener, resolveListenerHosts } from './listener-failure.ts'
import { openMetricsListener } from './metrics-listener.ts'
import { warnOfOpenFileLimit } from './open-file-limit.ts'
import { databaseModeWarning, openStore, sayingWaits } from './open-store.ts'
import { provisionKeys } from './provision-keys.ts'
import { startUp } from './start-up.ts'
import { stopDuringStartUp } from './start-up-stop.ts'
import { superviseWorkers } from './supervisor/supervisor.ts'
import { answerLivenessChecks } from './supervisor/worker-liveness.ts'
import { shareMetricsWithPrimary } from './supervisor/worker-metrics.ts'
import { takeWorkerLogFd } from './supervisor/worker-stdio.ts'
import { takeStopRequests } from './supervisor/worker-stop.ts'

// After a fatal failure, the longest in-flight requests are given (SHUTDOWN_TIMEOUT_MS if shorter): the
// process is no longer trusted, and the sooner it exits, the sooner a fresh one serves in its place.
const FATAL_GRACE_MS = 5000

/** Once per service, before anything serves: the open-file limit, migrations, the keys it is called with. */
async function prepareStore(store: Store, config: Config, log: Logger, terminal: Output): Promise<void> {
  warnOfOpenFileLimit(config.http.maxConnections, config.database, log)
  const { current, latest, compatibleFrom } = await store.migrate(sayingWaits(log))
  // A rollback, or an old instance restarting mid-deploy: the newer migrations keep this release working.
  if (current > latest) {
    log.warn(
      { schema: current, release: latest, compatibleFrom },
      'the database schema is newer than this release, and compatible with it: serving',
    )
  }
  const tooOpen = databaseModeWarning(config.database)
  if (tooOpen !== undefined) log.warn(tooOpen.details, tooOpen.message)
  const dataDirectory = config.database.engine === 'sqlite' ? config.database.dataDirectory : undefined
  await provisionKeys({ store, config, log, dataDirectory, terminal })
  // Served as it is (a staging copy may be wanted so), but not without a word: its lists lack pets.
  const { unfinishedSince: copyStartedAt } = await store.copyMarks()
  if (copyStartedAt !== undefined) {
    log.warn(
      { copyStartedAt },
      'this store is an unfinished copy: it lacks what the copy has not reached yet (pets, keys, ' +
        'Idempotency-Key records); run the same petstore copy again to finish it',
    )
  }
}

/**
 * Serves in this process. Alone, it also prepares the store and serves metrics; as a cluster worker, the
 * supervisor has done the first, and the worker hands its metrics to the supervisor's sum.
 * An uncaught exception or unhandled rejection stops it: drain as on SIGTERM, briefly, then exit 1.
 */
async function serveInProcess(
  config: Config,
  logger: Logger,
  terminal: Output,
  startingUp?: () => void,
): Promise<number> {
  const fatal = exitOnFatalFailure(logger, Math.min(config.server.shutdownTimeoutMs, FATAL_GRACE_MS))
  const alone = !cluster.isWorker
  // First thing: a stop the supervisor asks for during the start ends it rather than going unheard.
  const stopRequests = alone ? undefined : takeStopRequests()
  const { redisUrl } = config.rateLimit
  // First: credentials Redis refuses stop the start before a store is opened (or a database made).
  const redis = redisUrl ? await connectRedis(redisUrl, logger) : undefined
  const faultLines = new HeldFaultLines(logger)
  const store = await openStore(config.database, logger, faultLines).catch((error: unknown) => {
    redis?.client.disconnect()
    throw error
  })
  let metricsServer: Server | undefined
  let composed: FastifyInstance | undefined
  try {
    if (alone) await prepareStore(store, config, logger, terminal)
    const { app, metrics } = await composeApp(config, { store, logger, ...(redis ? { redis } : {}) })
    composed = app
    const shared = alone ? undefined : shareMetricsWithPrimary(metrics.registry)
    if (!alone) answerLivenessChecks()
    metricsServer =
      alone && config.metrics
        ? await openMetricsListener(metrics.registry, config.metrics, logger)
        : undefined
    // Every module serving needs is loaded by now: write the compile cache (when bin/petstore.js enabled it)
    // at once rather than at exit, so the next start finds it even if this process is killed. Before the
    // port opens: on a cold cache the write holds the loop for up to a second, which no client may see.
    flushCompileCache()
    const listening = startServer(
      app,
      config.server,
      async (appClosing, doneBy) => {
        metricsServer?.close()
        redis?.client.disconnect()
        try {
          await store.close(appClosing, doneBy)
        } finally {
          // Once the app has closed, nothing counts any more: the supervisor keeps a worker's counts once it
          // has gone, whatever stopped it (a stop signal to it alone, a fatal failure).
          await shared?.reportFinal()
        }
      },
      stopRequests && ((ask) => stopRequests.serving(ask)),
    )
    const server = await namingListener(listening, 'HOST:PORT', config.server)
    startingUp?.()
    fatal.stopWith(async () => {
      // A connection whose request ends during the drain is kept alive, and holds the exit for its
      // keep-alive timeout; closed as soon as it is idle instead.
      const closeIdle = setInterval(() => app.server.closeIdleConnections(), 100)
      try {
        await server.shutdown()
      } finally {
        clearInterval(closeIdle)
      }
    })
    const metricsAddress = metricsServer?.address()
    const metricsNote =
      typeof metricsAddress === 'object' && metricsAddress ? `; metrics on port ${metricsAddress.port}` : ''
    const docsNote = config.docs ? `; docs: ${server.url}/docs` : ''
    app.log.info(
      `serving ${server.url}/v1 (OpenAPI document: ${server.url}/v1/openapi.json${docsNote}${metricsNote}; store: ${storeNamed(config.database)})`,
    )
    faultLines.release()
    // Written now, not at the log's next batch: the serving line is what operators and supervisors wait for.
    logger.flush()
    return 0
  } catch (error) {
    metricsServer?.close()
    redis?.client.disconnect()
    // Before the store: the app's jobs (the schema check, the purge) would meet it closed, and say so.
    // Their own failures to close are not the start's: the error that stopped the start is the one said.
    await composed?.close().catch(() => undefined)
    await store.close().catch(() => undefined)
    throw error
  }
}

export const serveCommand: Command = {
  help: `Usage: petstore serve

Applies pending migrations, makes sure an API key exists (see README, "API keys"), and serves the API
under /v1 on HOST:PORT, with WORKERS processes (one per CPU with WORKERS=auto). Settings come from the
environment and from .env; see README, "Configuration". SIGTERM, SIGINT or SIGHUP stops accepting, answers
every request already read (served if in flight, else 503 with Connection: close), commits pending
writes, closes the store and exits 0; exit 1 if that takes over SHUTDOWN_TIMEOUT_MS + 2 s, or after an
uncaught failure (see README, "Operating").`,
  async run(args, { stdout }) {
    parseCommandArgs(args, {})
    // A worker logs to the service's stdout, which its supervisor gives it above its own standard streams.
    const logFd = cluster.isWorker ? takeWorkerLogFd() : 1
    if (logFd === undefined) {
      throw new CommandError(
        'a worker must be started by "petstore serve" with WORKERS, which gives it its log: under another cluster manager, run one "petstore serve" in its fork mode, with WORKERS for more cores',
      )
    }
    const { config, log, settings } = cluster.isWorker
      ? startUp({ isTTY: isatty(logFd) }, { bufferedLog: true, logFd })
      : startUp(stdout, { bufferedLog: true, logFd: 1 })
    try {
      // A worker's stop during its start is its supervisor's to ask (supervisor/worker-stop.ts).
      const startingUp = cluster.isWorker ? undefined : stopDuringStartUp(log)
      if (!cluster.isWorker) {
        await resolveListenerHosts([
          { settings: 'HOST:PORT', address: config.server },
          { settings: 'METRICS_HOST:METRICS_PORT', address: config.metrics },
        ])
      }
      if (config.workers === 1 || !cluster.isPrimary)
        return await serveInProcess(config, log, stdout, startingUp)
      // Up to 999 are taken (every limit explicit), but past the CPUs they only take turns on them, each
      // with its own memory and pool.
      const cpus = availableParallelism()
      if (config.workers > cpus) {
        log.warn(
          { workers: config.workers, cpus },
          'WORKERS is above the CPUs available: the workers take turns on them, each with its own memory and database connections',
        )
      }
      const { perMinute, redisUrl } = config.rateLimit
      if (perMinute > 0 && redisUrl === undefined) {
        log.warn(
          { workers: config.workers, perMinute },
          'each worker counts the rate limit alone: a key may make up to WORKERS times RATE_LIMIT_PER_MINUTE requests a minute here; set REDIS_URL for one count',
        )
      }
      // The supervisor prepares the store once, before any worker starts, and closes it again; credentials
      // Redis refuses stop it first, as they would stop every worker.
      const supervised = { ...config, environment: settings }
      const supervising = superviseWorkers(config.workers, supervised, log, async () => {
        if (redisUrl !== undefined) (await connectRedis(redisUrl, log)).client.disconnect()
        const store = await openStore(config.database, log)
        try {
          await prepareStore(store, config, log, stdout)
        } catch (error) {
          // Its failure to close is not the preparation's: the error that stopped it is the one said.
          await store.close().catch(() => undefined)
          throw error
        }
        await store.close()
        // The modules a worker loads are this process's too (imported to prepare): written before the
        // workers start, so that they start warm where the cache begins empty at every start (systemd's).
        flushCompileCache()
      })
      // Its own listeners are in place once it supervises.
      return await supervising.finally(() => startingUp?.())
    } catch (error) {
      // The lines logged so far wait in the log's buffer: out first, so that the line saying why the start
      // failed (on stderr, at once) comes last on a terminal.
      await new Promise<void>((done) => afterLogFlush(log, done))
      throw error
    }
  },
}

/** The store as an operator finds it: the file's full path, or the PostgreSQL URL without its password. */
function storeNamed(database: DatabaseSettings): string {
  if (database.engine === 'sqlite')
    return `sqlite:${database.path === ':memory:' ? database.path : resolve(database.path)}`
  // The settings took it: it parses.
  const { url, socket } = postgresUrlOf(database.url) as NonNullable<ReturnType<typeof postgresUrlOf>>
  const { protocol, username, host, pathname } = url
  const user = username === '' ? '' : `${username}@`
  return socket === undefined
    ? `${protocol}//${user}${host}${pathname}`
    : `${protocol}//${user}${pathname} (socket ${socket})`
}
