import cluster, { type Worker } from 'node:cluster'
import { realpathSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import { Registry } from 'prom-client'
import { BufferedLogOutput } from '../../log/log-output.ts'
import {
  countDroppedLogLines,
  countDroppedWorkerOutput,
  countWorkerRestarts,
  type WorkerRestartCause,
} from '../../metrics/metrics.ts'
import type { MetricsListener } from '../../metrics/metrics-server.ts'
import { STOP_SIGNALS } from '../../server.ts'
import { exitOnFatalFailure } from '../fatal-failure.ts'
import { openMetricsListener } from '../metrics-listener.ts'
import { ClusterMetrics } from './cluster-metrics.ts'
import { RestartBackoff } from './restart-backoff.ts'
import { LivenessWatch } from './worker-liveness.ts'
import { workerNodeFlags } from './worker-node-flags.ts'
import { WORKER_ENV, WORKER_STDIO, WorkerOutputRelay } from './worker-stdio.ts'
import { WorkerStops } from './worker-stop.ts'

// Workers cut their own in-flight requests at SHUTDOWN_TIMEOUT_MS, then flush their last counts and close
// the store; this is the time allowed for that before the supervisor stops waiting and kills them, so a
// worker stuck in shutdown cannot keep the service from exiting (and its orchestrator waiting) forever.
const WORKER_SHUTDOWN_MARGIN_MS = 5000
// What a start that fails exits with (a store it cannot open, above all); a setting refused exits 78 and
// never reaches a replacement (one worker listened, so settings held).
const START_FAILED = 1
// After a fatal failure, the exit waits this much past that kill, for the killed workers' exits: the drain
// ends the process, and the fatal failure's own bound is only a backstop that never cuts it short.
const KILLED_WORKERS_REAPED_MS = 1000
// How long, once the workers have exited, their last output (a count of what their logs dropped at exit)
// is waited for, read and written.
const LAST_OUTPUT_MS = 1000

/** What the supervisor needs of the configuration. */
export interface SupervisorSettings {
  /** Workers drain for this long before they are asked no more (`SHUTDOWN_TIMEOUT_MS`). */
  server: { shutdownTimeoutMs: number; shutdownDelayMs: number }
  /** Where the workers' summed metrics are served; none when `METRICS=off`. */
  metrics: MetricsListener | undefined
  /** Every setting as the service read them at its start (`settingsEnvironment`), given to each worker. */
  environment: Record<string, string>
  /** A listening worker that leaves the supervisor's checks unanswered this long is killed and replaced. */
  workerLivenessTimeoutMs: number
}

/**
 * The supervisor of `workers` processes sharing one port: runs `prepare` once before any worker starts, sums
 * their metrics, replaces one that dies or stops answering, and on a stop signal (or its own fatal failure)
 * drains them all: exit 0 when asked to stop and every worker stopped cleanly, else 1
 * (docs/decisions.md, "Under WORKERS, a start that fails stops the service").
 */
export async function superviseWorkers(
  workers: number,
  settings: SupervisorSettings,
  log: Logger,
  prepare: () => Promise<void>,
): Promise<number> {
  // How long a worker may take to stop: its drain starts after its delay, and the bounds count both.
  const workerStopMs = settings.server.shutdownTimeoutMs + settings.server.shutdownDelayMs
  // Every worker, a replacement too, runs on the settings the service read at its start.
  const workerEnvironment = { ...settings.environment, ...WORKER_ENV }
  const fatal = exitOnFatalFailure(
    log,
    workerStopMs + WORKER_SHUTDOWN_MARGIN_MS + KILLED_WORKERS_REAPED_MS + LAST_OUTPUT_MS,
  )
  await prepare()

  // The supervisor's own metrics, added to its workers': what its log and its relay dropped, and the
  // workers it replaced.
  const own = new Registry()
  countDroppedLogLines(own)
  countDroppedWorkerOutput(own)
  const restarts = countWorkerRestarts(own)
  const metricsServer = settings.metrics
    ? await openMetricsListener(new ClusterMetrics(own), settings.metrics, log)
    : undefined

  let stopping = false
  const backoff = new RestartBackoff()
  // Killed by the liveness watch: their exit is said and counted as that, not as a crash.
  const unresponsive = new WeakSet<Worker>()
  // Workers that listened: a replacement that exits 1 before (as a start does whose store is down) is no
  // crash, and said so; killed by a signal (the OOM killer, a segfault), it is one.
  const started = new WeakSet<Worker>()
  const stops = new WorkerStops()
  const liveness = new LivenessWatch(settings.workerLivenessTimeoutMs, (worker, silentMs) => {
    if (worker.isDead()) return
    log.error(
      { worker: worker.process.pid, silentMs },
      'a worker has not answered for WORKER_LIVENESS_TIMEOUT_MS; killing it',
    )
    unresponsive.add(worker)
    worker.process.kill('SIGKILL')
  })
  // Workers' output, relayed until it closes (a worker that died just before a stop included): the
  // supervisor exits once it is passed on.
  const relayed = new BufferedLogOutput({ shared: true, fd: 2 })
  const relay = new WorkerOutputRelay(relayed)
  const relaying = new Set<Promise<void>>()
  // Forked from the entry's own file, links resolved: an upgrade that switches the release under the path
  // the service started from (`ln -sfn`) must not run its code in a worker replaced before the restart.
  cluster.setupPrimary({
    exec: realpathSync(process.argv[1] ?? ''),
    execArgv: workerNodeFlags(process.execArgv, workers, availableParallelism()),
    stdio: WORKER_STDIO,
  })
  const fork = () => {
    const worker = cluster.fork(workerEnvironment)
    const output = relay.follow(worker.process).finally(() => relaying.delete(output))
    relaying.add(output)
    worker.on('exit', (code, signal) => onExit(worker, code, signal))
    stops.follow(worker)
    worker.once('listening', () => {
      started.add(worker)
      liveness.watch(worker)
    })
  }
  // Until a worker has listened, what stopped one (the port taken, a setting only a worker checks) stops
  // its replacements too: the service fails as one process that cannot start does, for systemd to see.
  let listened = false
  cluster.once('listening', () => {
    listened = true
  })
  const onExit = async (worker: Worker, code: number | null, signal: string | null) => {
    if (stopping) return
    if (!listened) {
      log.error(
        { worker: worker.process.pid, exitCode: code, signal },
        'a worker could not start; stopping the service',
      )
      await stopWorkers()
      process.exit(1)
    }
    // A stop signal sent to a worker alone: it drained (exit 0, its counts reported), or had not installed
    // its handlers yet. Said as a stop, not a crash; replaced with the same growing pauses all the same.
    const delay = backoff.delayAfterCrash(performance.now())
    const cause: WorkerRestartCause = unresponsive.has(worker)
      ? 'unresponsive'
      : !started.has(worker) && signal === null && code === START_FAILED
        ? 'not_started'
        : stoppedCleanly(code, signal)
          ? 'stopped'
          : 'died'
    // `exitCode`: a request line's `code` is a string (the Error body's), and a log index takes one type.
    const fields = { worker: worker.process.pid, exitCode: code, signal, cause, restartInMs: delay }
    if (cause === 'stopped') log.warn(fields, 'a worker stopped; replacing it')
    // Its own line said why (the database unreachable): this one says only that it is tried again.
    else if (cause === 'not_started') log.warn(fields, 'a replacement worker could not start; trying again')
    else if (cause === 'unresponsive')
      log.error(fields, 'a worker killed for not answering exited; replacing it')
    else log.error(fields, 'a worker died; replacing it')
    await sleep(delay)
    if (stopping) return
    restarts.labels(cause).inc()
    fork()
  }
  for (let i = 0; i < workers; i++) fork()
  log.info(
    { workers, metricsPort: (metricsServer?.address() as { port?: number } | null)?.port },
    'supervising workers',
  )

  // A worker killed for its silence is on its way out: its exit is no failed drain.
  const stoppable = () =>
    Object.values(cluster.workers ?? {}).filter(
      (worker): worker is Worker => worker !== undefined && !worker.isDead() && !unresponsive.has(worker),
    )
  /**
   * Drains every worker (once); resolves with whether all stopped cleanly. A stop a signal began at `began`
   * ends, when clean, with the line a lone process ends with.
   */
  let draining: Promise<boolean> | undefined
  const stopWorkers = (signal: NodeJS.Signals = 'SIGTERM', began?: number): Promise<boolean> => {
    stopping = true
    liveness.stop()
    draining ??= drainWorkers(stoppable(), workerStopMs, log, (worker) => stops.ask(worker, signal))
      .then(async (clean) => {
        if (clean && began !== undefined) {
          log.info({ signal, durationMs: Math.round(performance.now() - began) }, 'stopped')
        }
        // Read to the end, then written: a write still under way at exit would count what follows as dropped.
        // Its own log too, in the same second: the line saying why it stops must not be behind a write.
        const ownLog = new Promise<void>((done) => log.flush(() => done()))
        const relays = Promise.all(relaying).then(() => new Promise<void>((done) => relayed.flush(done)))
        const passedOn = Promise.all([relays, ownLog])
        await Promise.race([passedOn, sleep(LAST_OUTPUT_MS, undefined, { ref: false })])
        return clean
      })
      .finally(() => metricsServer?.close())
    return draining
  }
  fatal.stopWith(async () => {
    await stopWorkers()
  })
  let signalled = false
  const stop = async (signal: NodeJS.Signals) => {
    const again = signalled
    signalled = true
    if (stopping) {
      // A second signal: each worker asked again ends its delay, as a second signal ends a lone process's.
      // (The first, to a supervisor stopping of itself, asks nothing more: its stop is under way.)
      if (again) for (const worker of stoppable()) stops.ask(worker, signal)
      return
    }
    const began = performance.now()
    log.info({ signal }, 'stopping workers')
    const clean = await stopWorkers(signal, began)
    // An orchestrator reads the exit code: a worker that failed its drain may have lost requests.
    process.exit(clean ? 0 : 1)
  }
  for (const signal of STOP_SIGNALS) process.on(signal, stop)
  return 0
}

/**
 * Asks every worker `running` to drain (`ask`) and waits for them, killing any still running
 * `workerStopMs` (SHUTDOWN_DELAY_MS + SHUTDOWN_TIMEOUT_MS) plus a margin later; resolves with whether all
 * stopped cleanly.
 */
async function drainWorkers(
  running: Worker[],
  workerStopMs: number,
  log: Logger,
  ask: (worker: Worker) => void,
): Promise<boolean> {
  const exits = running.map((worker) => stopped(worker, log))
  for (const worker of running) ask(worker)
  const deadline = setTimeout(() => {
    for (const worker of running) {
      if (worker.isDead()) continue
      log.error({ worker: worker.process.pid }, 'a worker did not stop in time; killing it')
      worker.process.kill('SIGKILL')
    }
  }, workerStopMs + WORKER_SHUTDOWN_MARGIN_MS)
  const clean = await Promise.all(exits)
  clearTimeout(deadline)
  return clean.every(Boolean)
}

/**
 * Whether a worker's exit is a clean stop. Killed by a stop signal (ours, or a terminal's to its whole
 * group) means it had not installed its handlers yet: it was still starting, with no request to lose.
 */
function stoppedCleanly(code: number | null, signal: string | null): boolean {
  return code === 0 || STOP_SIGNALS.includes(signal as NodeJS.Signals)
}

/** Resolves, once `worker` has exited, with whether it stopped cleanly; an unclean exit is logged. */
function stopped(worker: Worker, log: Logger): Promise<boolean> {
  return new Promise((resolve) =>
    worker.once('exit', (code: number | null, signal: string | null) => {
      const clean = stoppedCleanly(code, signal)
      if (!clean)
        log.error({ worker: worker.process.pid, exitCode: code, signal }, 'a worker did not stop cleanly')
      resolve(clean)
    }),
  )
}
