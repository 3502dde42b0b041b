import { closeSync, constants, fstatSync, openSync, writeSync } from 'node:fs'

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

/** Whether `fd` is a socket (systemd's journal gives a unit's standard streams as one). */
function isSocket(fd: number): boolean {
  try {
    return fstatSync(fd).isSocket()
  } catch {
    return false
  }
}

/**
 * At the exit of a process sharing its standard streams with the service's others (WORKERS), once the
 * exit's write has written or dropped its lines: those that are sockets are let go, their numbers given
 * to /dev/null. Node restores, as a process ends, the flags its standard streams had when it started (if
 * they are still the same file), and a worker starts with them blocking: on the open file every process
 * shares, that made the others' writes wait for ever on a journal that stopped reading. /dev/null, not
 * a free number, so that nothing opened during the rest of the exit is written as stdout.
 */
export function releaseSharedSockets(): void {
  for (const fd of [1, 2]) {
    if (!isSocket(fd)) continue
    try {
      closeSync(fd)
      const taken = openSync('/dev/null', 'w')
      if (taken !== fd) closeSync(taken)
    } catch {
      // No descriptor left for /dev/null: the number stays free, which Node's restore skips as well.
    }
  }
}
