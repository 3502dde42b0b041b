import type { FastifyInstance } from 'fastify'

/**
 * Runs `job` every `everyMs` while the app is up, and once more as it closes (so nothing counted is lost
 * on a graceful stop). Failures are logged and retried at the next tick; the timer never keeps the
 * process alive.
 */
export function runPeriodically(
  app: FastifyInstance,
  name: string,
  everyMs: number,
  job: () => Promise<unknown>,
) {
  let timer: NodeJS.Timeout | undefined
  const run = () =>
    job().catch((error: unknown) => app.log.warn({ err: error, job: name }, 'periodic job failed'))
  app.addHook('onReady', async () => {
    timer = setInterval(run, everyMs)
    timer.unref()
  })
  app.addHook('onClose', async () => {
    clearInterval(timer)
    await run()
  })
}
