import type { FastifyInstance } from 'fastify'

export interface PeriodicJobOptions {
  everyMs: number
  /** Also run as the app becomes ready (not awaited: the app does not wait for it). */
  atStart?: boolean
  /** Run once more as the app closes, after the run in progress, so nothing counted is lost (default). */
  atClose?: boolean
  /** Told, instead of the usual warning, when that last run fails: to say what is lost with it. */
  onLastRunFailed?: (error: unknown) => void
}

// Distinct errors said in one run of failures; the next are counted in the success's line only.
const SAID_AT_MOST = 8

/**
 * Runs `job` every `everyMs` while the app is up, never two runs at once; on close the run in progress is
 * aborted and waited for. A failure is retried at the next tick, each error of a run of them logged once;
 * the timer keeps no process alive (docs/decisions.md, "Housekeeping").
 */
export function runPeriodically(
  app: FastifyInstance,
  name: string,
  { everyMs, atStart = false, atClose = true, onLastRunFailed }: PeriodicJobOptions,
  job: (signal: AbortSignal) => Promise<unknown>,
) {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<unknown> | undefined
  const closing = new AbortController()
  // Each error said once per run of failures (a store outage fails every run, and is logged as such
  // already, its errors often taking turns); the end of the run said at the same level.
  let failedRuns = 0
  const said = new Set<string>()
  const warn = (error: unknown) => {
    failedRuns++
    const message = error instanceof Error ? error.message : String(error)
    if (said.has(message) || said.size > SAID_AT_MOST) return
    said.add(message)
    // Errors whose words change every run (an address, a count) would each be said, and kept, for days.
    if (said.size > SAID_AT_MOST) {
      app.log.warn({ job: name }, 'periodic job keeps failing with other errors, not said until it succeeds')
      return
    }
    app.log.warn(
      { err: error, job: name },
      'periodic job failed; retried at every run, and said again once it succeeds',
    )
  }
  const succeeded = () => {
    if (failedRuns > 0) app.log.warn({ job: name, failedRuns }, 'periodic job succeeded again')
    failedRuns = 0
    said.clear()
  }
  // The last run, at close, is said whatever came before it: nothing runs after it.
  const lastRunFailed = (error: unknown) =>
    app.log.warn({ err: error, job: name }, 'periodic job failed on its last run, at close')
  const run = (signal: AbortSignal, onFailure = warn) => job(signal).then(succeeded, onFailure)
  const tick = () => {
    running ??= run(closing.signal).finally(() => {
      running = undefined
    })
  }
  app.addHook('onReady', async () => {
    timer = setInterval(tick, everyMs)
    timer.unref()
    if (atStart) tick()
  })
  app.addHook('onClose', async () => {
    clearInterval(timer)
    closing.abort()
    await running
    if (atClose) await run(new AbortController().signal, onLastRunFailed ?? lastRunFailed)
  })
}
