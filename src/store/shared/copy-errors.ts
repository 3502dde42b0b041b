import type { TargetContents } from './store-copy.ts'

// What stops a copy (store-copy.ts) before or while it writes: each says why and what to do instead.

export class TargetNotEmptyError extends Error {
  /** `keysCollide`: both stores hold keys and the copy takes them, so --into-non-empty alone would fail. */
  constructor({ pets, keys }: TargetContents, sourceHasSecret: boolean, keysCollide: boolean) {
    const holds = `the target already holds ${pets} pet${pets === 1 ? '' : 's'} and ${keys} API key${keys === 1 ? '' : 's'}`
    const notACopy = `${holds}, and is not an earlier copy of this source`
    super(
      !sourceHasSecret
        ? `${holds}; the source holds no cursor secret (no server has opened it), so an earlier copy of it ` +
            'cannot be recognised: give --into-non-empty to copy what is missing (a row that differs stops it)'
        : keysCollide
          ? `${notACopy}; its API keys and the source's would collide (each store numbers its keys from 1): ` +
            'copy into a database no service has started on, or give --without-keys --into-non-empty to copy ' +
            'the pets alone'
          : `${notACopy} (give --into-non-empty to copy into it anyway)`,
    )
    this.name = 'TargetNotEmptyError'
  }
}

// Ids named in a conflict's message: enough to look at, short enough for one line.
export const IDS_SHOWN = 5

/** Source rows whose ids the target gives to other rows: copying keeps ids, so the stores cannot merge. */
export class CopyConflictError extends Error {
  readonly count: number
  readonly ids: readonly bigint[]

  constructor(rows: 'pets' | 'keys', ids: readonly bigint[], count = ids.length) {
    const shown = `${ids.slice(0, IDS_SHOWN).join(', ')}${count > IDS_SHOWN ? ', …' : ''}`
    const one = count === 1
    const what =
      rows === 'pets'
        ? `${one ? 'pet of the source has an id' : 'pets of the source have ids'} the target holds with other content`
        : `${one ? 'API key of the source collides' : 'API keys of the source collide'} with the target's by id or name`
    // Every store numbers its keys from 1: a target a service has started on holds one at the first id.
    const advice =
      rows === 'pets'
        ? 'copy into an empty target'
        : "a target with API keys of its own takes none of the source's; copy into one no service has started on"
    super(
      `${count} ${what} (${one ? 'id' : 'ids'} ${shown}): stores whose ids collide cannot be merged; ${advice}`,
    )
    this.name = 'CopyConflictError'
    this.count = count
    this.ids = ids.slice(0, IDS_SHOWN)
  }
}

/**
 * A copy --without-keys into a target where keys of the source (the same hash) are active, as an earlier
 * full copy left them: the production keys would go on working on a staging copy.
 */
export class SourceKeysActiveError extends Error {
  constructor(names: readonly string[]) {
    const shown = `${names.slice(0, IDS_SHOWN).join(', ')}${names.length > IDS_SHOWN ? ', …' : ''}`
    const them = names.length === 1 ? 'it' : 'them'
    super(
      `the target holds ${names.length} of the source's API keys active (${shown}), which --without-keys ` +
        `would leave working there: revoke ${them} on the target (petstore keys revoke NAME), ` +
        'or copy into a new database',
    )
    this.name = 'SourceKeysActiveError'
  }
}

/** Throws CopyConflictError when `ids` (of rows the target holds otherwise) is not empty. */
export function refuseConflicts(rows: 'pets' | 'keys', ids: readonly bigint[]): void {
  if (ids.length > 0) throw new CopyConflictError(rows, ids)
}
