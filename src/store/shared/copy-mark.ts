/**
 * The mark of a copy under way, in both engines' `service_settings`: `petstore copy` sets it on its target
 * until a run finishes (`CopyTarget.markUnfinished`), and a start reads it to warn that lists lack pets.
 */
export const UNFINISHED_MARK = 'copy_unfinished'

/**
 * When the last copy into the store finished (`CopyTarget.markFinished`): a service serving it meanwhile
 * lets its read cache go (pets/copy-watch.ts).
 */
export const FINISHED_MARK = 'copy_finished'
