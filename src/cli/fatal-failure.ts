import type { Logger } from 'pino'
import { currentRequestId } from '../http/request-id.ts'
import { exitAfterLogFlush } from '../log/logger.ts'

// Further failures logged while stopping, at most: a fault that repeats must not flood the last lines.
const FURTHER_FAILURES_LOGGED = 10

export interface FatalFailureHandling {
  /**
   * What to do before exiting once the process serves: stop accepting and let in-flight requests finish
   * (the drain of a shutdown). Until this is set, a failure exits as soon as it is logged.
   */
  stopWith(stop: () => Promise<void>): void
}

/**
 * Makes an uncaught exception or unhandled rejection end the process: logged once at fatal with the request
 * id, in-flight requests given up to `graceMs` (the stop set with `stopWith`), then exit 1 for a fresh
 * process (docs/decisions.md, "Fatal failures end the process").
 */
export function exitOnFatalFailure(log: Logger, graceMs: number): FatalFailureHandling {
  let stop: (() => Promise<void>) | undefined
  let failed = false
  let further = 0
  let exiting = false

  const exit = () => {
    if (exiting) return
    exiting = true
    // Written before exiting: the log is buffered, and a fatal line lost is no line.
    exitAfterLogFlush(log, 1)
  }

  const onFailure = (error: unknown, origin: 'uncaughtException' | 'unhandledRejection') => {
    const reqId = currentRequestId()
    const context = { err: error, origin, ...(reqId === undefined ? {} : { reqId }) }
    if (failed) {
      if (further++ < FURTHER_FAILURES_LOGGED) log.error(context, 'another failure while stopping')
      return
    }
    failed = true
    const what = origin === 'unhandledRejection' ? 'unhandled rejection' : 'uncaught exception'
    log.fatal(context, `${what}: stopping, in-flight requests get up to ${graceMs} ms, then exit 1`)
    if (stop === undefined) return exit()
    setTimeout(() => {
      log.error(`still stopping ${graceMs} ms after the failure: exiting, requests in flight are cut`)
      exit()
    }, graceMs)
    stop().then(exit, (stopError: unknown) => {
      log.error({ err: stopError }, 'stopping after a fatal failure failed')
      exit()
    })
  }

  // A SIGTERM drain under way when the failure came ends in its own `process.exit(0)`: the code is made 1
  // as the process exits (Node reads `process.exitCode` after the 'exit' listeners).
  process.on('exit', () => {
    if (failed) process.exitCode = 1
  })
  process.on('uncaughtException', (error, origin) =>
    onFailure(error, origin === 'unhandledRejection' ? origin : 'uncaughtException'),
  )
  process.on('unhandledRejection', (reason) => onFailure(reason, 'unhandledRejection'))
  return {
    stopWith(given) {
      stop = given
    },
  }
}
