import { constants } from 'node:os'
import { STOP_SIGNALS } from '../server.ts'

/** The shell's exit code for a process ended by `signal` (143 for SIGTERM), as a stop by it exits. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0)
}

/**
 * Ends a command a stop signal reached before its end: one line on `stderr` saying so and what it leaves
 * (`rest`, after the signal's name), then the shell's code for the signal.
 */
export function exitStopped(
  stderr: { write(text: string): unknown },
  command: string,
  signal: NodeJS.Signals,
  rest: string,
): never {
  stderr.write(`petstore ${command}: stopped by ${signal} ${rest}\n`)
  process.exit(signalExitCode(signal))
}

/**
 * Calls `stop` on the first of the signals a server stops on (SIGHUP too: the terminal went away), once;
 * returns the function that takes the handlers off again, for a command that ended on its own.
 */
export function onStopSignal(stop: (signal: NodeJS.Signals) => void): () => void {
  const release = () => {
    for (const signal of STOP_SIGNALS) process.off(signal, once)
  }
  // Released after `stop`: one that exits keeps every handler while it cleans up, so that a second
  // signal cannot kill it half-way; one that goes on leaves a second signal its default, ending it.
  const once = (signal: NodeJS.Signals) => {
    try {
      stop(signal)
    } finally {
      release()
    }
  }
  for (const signal of STOP_SIGNALS) process.on(signal, once)
  return release
}
