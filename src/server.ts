import { Server as NetServer } from 'node:net'
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { exitAfterLogFlush } from './log/logger.ts'

/** What stops the service, and a command; SIGHUP is its terminal gone (closed, a dropped ssh session). */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP']

/** Where the API listens (`HOST`, `PORT`), and how long a stop lets open connections finish. */
export interface ListenSettings {
  host: string
  port: number
  shutdownTimeoutMs: number
  /** Served on after a stop signal, not ready, before the drain: a balancer takes the instance out first. */
  shutdownDelayMs: number
}

export interface RunningServer {
  /** The base URL the server listens on, e.g. `http://127.0.0.1:8080`. */
  url: string
  /** Stops accepting, answers what open connections send (bounded by SHUTDOWN_TIMEOUT_MS), then closes. */
  shutdown(): Promise<void>
}

/** Time given, after the drain's SHUTDOWN_TIMEOUT_MS, to the app's closing hooks and `closeAfter` together. */
export const SHUTDOWN_MARGIN_MS = 2000

/** The end of that margin, kept for the last log lines and the exit (docs/decisions.md "Shutdown"). */
export const EXIT_RESERVE_MS = 500

/**
 * Stops accepting connections and keeps each open one until it has answered what it received (503 with
 * `Connection: close` from now on); resolves when none is left, or cuts them after `timeoutMs`. Not Node's
 * `close`, which loses requests sent on idle connections (docs/decisions.md, "Shutdown drains connections").
 */
function drain(app: FastifyInstance, timeoutMs: number): Promise<void> {
  app.refuseRequests()
  return new Promise((resolve) => {
    const cut = setTimeout(() => {
      // Their requests get no answer and write no request line: said here, once, with how many.
      app.server.getConnections((error, connections) => {
        if (!error && connections > 0) {
          app.log.warn(
            { connections, shutdownTimeoutMs: timeoutMs },
            'shutdown: connections still open at SHUTDOWN_TIMEOUT_MS are cut (a request under way on one gets no answer)',
          )
        }
        app.server.closeAllConnections()
        resolve()
      })
    }, timeoutMs)
    NetServer.prototype.close.call(app.server, () => {
      clearTimeout(cut)
      resolve()
    })
  })
}

/**
 * Listens, and on SIGTERM, SIGINT or SIGHUP drains, closes the app and runs `closeAfter` (the store's close)
 * with the moment it must be done by, so every acknowledged write is committed before exit 0. Past the hard
 * limit, what still hangs is logged and the process exits 1 (docs/decisions.md, "Shutdown is bounded").
 */
export async function startServer(
  app: FastifyInstance,
  { host, port, shutdownTimeoutMs, shutdownDelayMs }: ListenSettings,
  closeAfter: (appClosing: Promise<void>, doneBy: number) => Promise<void>,
  /** Another way a stop is asked for than this process's signals (a cluster worker's supervisor). */
  stopAsked?: (ask: (signal: NodeJS.Signals) => void) => void,
): Promise<RunningServer> {
  await app.listen({ host, port })
  const address = app.server.address()
  const listening = typeof address === 'object' && address !== null ? address.port : port
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${listening}`

  let closing: Promise<void> | undefined
  const shutdown = () => {
    closing ??= (async () => {
      // Whatever the drain leaves of the bound goes to the closing, less what the exit needs.
      const doneBy = performance.now() + shutdownTimeoutMs + SHUTDOWN_MARGIN_MS - EXIT_RESERVE_MS
      await drain(app, shutdownTimeoutMs)
      // Together: on a hung database the app's last writes end only when the store's close fails them.
      const appClosing = app.close()
      await Promise.all([closeAfter(appClosing, doneBy), appClosing])
    })()
    return closing
  }

  let delayed: NodeJS.Timeout | undefined
  // Stops asked for, by where they came from: a terminal's Ctrl-C reaches a worker and its supervisor, which
  // asks too, and the same stop asked both ways is one.
  const asked = { signal: 0, supervisor: 0 }
  const onStop = (from: keyof typeof asked, signal: NodeJS.Signals) => {
    if (closing) return
    asked[from]++
    // A second ask during the delay stops waiting for the balancer.
    if (delayed !== undefined) {
      if (asked[from] < 2) return
      clearTimeout(delayed)
      delayed = undefined
    } else if (shutdownDelayMs > 0) {
      app.log.info({ signal, shutdownDelayMs }, 'stopping: not ready, serving on until the drain')
      app.announceStop()
      delayed = setTimeout(() => {
        delayed = undefined
        // A fatal failure meanwhile has begun its own stop, which ends the process with 1.
        if (!closing) stopNow(signal)
      }, shutdownDelayMs)
      return
    }
    stopNow(signal)
  }
  const stopNow = (signal: NodeJS.Signals) => {
    app.log.info({ signal }, 'shutting down')
    const boundMs = shutdownTimeoutMs + SHUTDOWN_MARGIN_MS
    const began = performance.now()
    const exitBy = began + boundMs
    // Not unref'd: a close waiting on nothing the event loop holds would otherwise end the process with 0.
    const hardLimit = setTimeout(() => {
      app.log.error({ boundMs }, 'shutdown did not finish in time; exiting')
      process.exit(1)
    }, boundMs)
    shutdown().then(
      // Every request line written first (the log is buffered), within what is left of the bound: a
      // shutdown that finished must not be reported as one that did not.
      () => {
        clearTimeout(hardLimit)
        // A journal tells a stop that drained from one cut short (SIGKILL at the stop timeout) by it.
        app.log.info({ signal, durationMs: Math.round(performance.now() - began) }, 'stopped')
        // The app's logger flushes as pino's does (the service's is http/lazy-logger.ts).
        exitAfterLogFlush(
          app.log as unknown as Pick<Logger, 'flush'>,
          0,
          Math.max(0, exitBy - performance.now()),
        )
      },
      (error: unknown) => {
        app.log.error({ err: error }, 'shutdown failed')
        process.exit(1)
      },
    )
  }
  const onSignal = (signal: NodeJS.Signals) => onStop('signal', signal)
  // `on`, not `once`: a second signal (Ctrl-C twice, or the process group's and then the supervisor's)
  // must not fall back to Node's default, which would kill the process mid-drain.
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal)
  stopAsked?.((signal) => onStop('supervisor', signal))

  return { url, shutdown }
}
