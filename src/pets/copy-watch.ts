import type { Store } from '../store/store.ts'
import type { ReadCache } from './read-cache.ts'

/**
 * Watches the marks `petstore copy` leaves on the store (read at start, then at every call of the function
 * returned): when a copy begins or ends, the read cache lets every answer go, and keeps no list page while
 * one is under way. A copy adds pets at ids below those a server has listed since (its target served
 * while it is unfinished, or a live store copied into): a page kept from before would hide them for good.
 * `changed` is called too when they change after start: a copy brings its source's cursor secret.
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
