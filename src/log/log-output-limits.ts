// The log output's limits, each named: how much it batches, holds back and retries (log-output.ts).

/**
 * How a server writes its log to standard output: buffered and asynchronous, so no request waits for a
 * write (docs/decisions.md, "The request log is buffered"). Lines are gathered until `batchBytes`, or for
 * at most `flushIntervalMs`, then written by libuv's thread pool, a batch per write().
 */
export const LOG_OUTPUT = {
  // Alone on its stdout, a process writes large batches: each write() wakes a thread and the reader.
  batchBytes: 32 * 1024,
  maxWriteBytes: 64 * 1024,
  // Workers sharing one stdout write at most PIPE_BUF bytes at a time (unless one line is longer): a pipe
  // takes such a write whole, so their lines never interleave.
  sharedBatchBytes: 3584,
  sharedMaxWriteBytes: 4096,
  flushIntervalMs: 500,
  // What a stdout that does not keep up may hold back; past it, lines are dropped and counted.
  maxBufferedBytes: 8 * 1024 * 1024,
  // How often dropped lines are reported in the log itself (once it takes lines again).
  dropReportIntervalMs: 10_000,
  retryMs: 10,
  // A file refusing writes (its disk full) is tried again this often: space seldom comes back at once.
  refusedRetryMs: 1000,
  // How long the write at exit retries a full non-blocking stdout before counting the rest as dropped.
  exitWaitMs: 200,
} as const

// A file's write refusals that pass once space is freed or the disk recovers; any other (EPIPE: the
// reader is gone) is for good.
export const REFUSALS_THAT_PASS = new Set(['ENOSPC', 'EDQUOT', 'EFBIG', 'EIO'])
