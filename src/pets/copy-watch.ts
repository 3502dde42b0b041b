import type { Store } from '../store/store.ts'
import type { ReadCache } from './read-cache.ts'

/**
 * Watches the marks `petstore copy` leaves on the store (at start, then at each call of the function
 * returned): when a copy begins or ends, the read cache lets every answer go, keeps no list page meanwhile,
 * and `changed` is called (docs/decisions.md, "A copy into a served store: its marks, read every 5 s").
 */
export async function watchCopies(
  store: Pick<Store, 'copyMarks'>,
  cache: ReadCache,
  changed: () => Promise<void> = async () => {},
): Promise<() => Promise<void>> {
  let seen: string | undefined
  const check = async () => {
    const { unfinishedSince, lastFinishedAt } = await store.copyMarks()
    const marks = `${unfinishedSince ?? ''} ${lastFinishedAt ?? ''}`
    if (marks === seen) return
    // Before the marks are taken as seen: a failure is tried again at the next check.
    if (seen !== undefined) await changed()
    // At start nothing is kept yet: only a copy under way changes what will be.
    if (seen !== undefined || unfinishedSince !== undefined) cache.forgetAll(unfinishedSince !== undefined)
    seen = marks
  }
  await check()
  return check
}
