// Loaded into every test file's process by `npm test` (--import). A file whose tests are done but which
// still holds the event loop (a server, timer or thread left open) is failed, naming what it holds,
// instead of hanging the run. Node's own --test-force-exit ended such files too, but it also drops
// verdicts a file had not yet sent when run concurrently (docs/decisions.md, "Test timeouts").
import { after } from 'node:test'

/**
 * How long a file may take to end once its tests are done (shorter in the test of this guard). Registered
 * before the file is loaded, this hook runs first of its top-level `after` hooks: theirs share the time.
 */
const OPEN_HANDLES_GRACE_MS = Number(process.env.OPEN_HANDLES_GRACE_MS ?? 10_000)

after(() => {
  setTimeout(() => {
    process.stderr.write(
      `the tests are done, but after ${OPEN_HANDLES_GRACE_MS} ms the process still holds: ` +
        `${process.getActiveResourcesInfo().join(', ')}\n`,
    )
    process.exit(1)
  }, OPEN_HANDLES_GRACE_MS).unref()
})
