import { constants, fstatSync, openSync, writeSync } from 'node:fs'

/**
 * `fd`, or, when it is a pipe (a container runtime's log FIFO), the same pipe opened again through /proc
 * with O_NONBLOCK: an open file of this process's own, whose flag no process sharing the pipe can clear.
 * On a blocking stdout nobody reads, a write waits in the thread pool for ever, and so does the exit,
 * which joins those threads (docs/decisions.md, "The request log is buffered").
 */
export function nonBlockingPipe(fd: number): number {
  try {
    if (fstatSync(fd).isFIFO())
      return openSync(`/proc/self/fd/${fd}`, constants.O_WRONLY | constants.O_NONBLOCK)
  } catch {
    // No /proc, or nobody has the pipe open for reading (ENXIO): the descriptor as it is.
  }
  return fd
}

/**
 * One line on stderr for the lines the exit could not write: past this point no metric or warning line
 * can carry them. Stderr holds only the few lines a command prints, so one short write does not wait.
 */
export function reportDroppedAtExit(lines: number): void {
  try {
    writeSync(
      2,
      `${JSON.stringify({ level: 40, time: Date.now(), droppedLines: lines, msg: 'log lines dropped at exit: standard output did not take them' })}\n`,
    )
  } catch {
    // Stderr gone too: nothing is left to tell.
  }
}
