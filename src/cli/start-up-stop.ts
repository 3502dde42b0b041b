import type { Logger } from 'pino'
import { afterLogFlush } from '../log/logger.ts'
import { STOP_SIGNALS } from '../server.ts'
import { signalExitCode } from './stop-signals.ts'

/**
 * A stop signal during the start ends the process as the signal does, once the lines logged so far are
 * written (docs/decisions.md, "A stop during the start"). Returns what ends this, once the server's own
 * listeners are in place.
 */
export function stopDuringStartUp(log: Logger): () => void {
  // Listeners already there (bin/petstore.js's, as PID 1) are not the server's.
  const before = new Map<NodeJS.Signals, number>(
    STOP_SIGNALS.map((signal) => [signal, process.listenerCount(signal)]),
  )
  const release = () => {
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal)
  }
  function onSignal(signal: NodeJS.Signals): void {
    // Listening, the server drains instead.
    if (process.listenerCount(signal) > (before.get(signal) ?? 0) + 1) return
    release()
    log.info({ signal }, 'stopped during start-up, before serving')
    const end = () => {
      // As PID 1 the signal's default action is ignored: it exits with the code that action gives.
      if (process.pid === 1) process.exit(signalExitCode(signal))
      // No listener left: Node has restored the default action, which ends the process. One added while
      // the log was written is the server's, listening by then: it drains, as for any stop.
      process.kill(process.pid, signal)
    }
    // Within a second, whatever the log: a stuck stdout does not keep the process from its signal.
    afterLogFlush(log, end)
  }
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal)
  return release
}
