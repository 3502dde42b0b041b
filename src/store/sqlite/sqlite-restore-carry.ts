import { DatabaseSync } from 'node:sqlite'
import type { CarriedForward } from '../shared/backup-role.ts'
import { highestIdGiven, raiseIdSequence } from './sqlite-sequences.ts'

/**
 * Carries into the restored `copy` what must outlive a restore, from the held database it replaces (`old`):
 * its revocations and id sequences (keys made since are only counted), each part read apart, so a damaged
 * one gives what it can; a failed write is thrown (docs/decisions.md, "A restore undoes no revocation").
 */
export function carryForwardFrom(old: DatabaseSync, copy: string): CarriedForward {
  let unreadable: string | undefined
  const fromOld = <T>(read: () => T): T | undefined => {
    try {
      return read()
    } catch (error) {
      unreadable ??= (error as Error).message
      return undefined
    }
  }
  const replacedPets = fromOld(() => {
    const count = old.prepare('SELECT count(*) AS n FROM pets')
    count.setReadBigInts(true)
    return (count.get() as { n: bigint }).n
  })
  const revoked = fromOld(() =>
    old.prepare('SELECT hash, revoked_at FROM api_keys WHERE revoked_at IS NOT NULL').all(),
  )
  const given = fromOld(() =>
    (['pets', 'api_keys'] as const).map(
      (table) => [table, highestIdGiven((sql) => old.prepare(sql), table)] as const,
    ),
  )
  const active = fromOld(() =>
    old.prepare('SELECT hash, name FROM api_keys WHERE revoked_at IS NULL ORDER BY id').all(),
  )

  const db = new DatabaseSync(copy)
  try {
    // A backup file in WAL mode (a kept replaced database is one) would take these writes in its log.
    db.exec('PRAGMA journal_mode = DELETE')
    db.exec('BEGIN IMMEDIATE')
    let revocations: number | undefined
    if (revoked !== undefined) {
      const revoke = db.prepare('UPDATE api_keys SET revoked_at = ? WHERE hash = ? AND revoked_at IS NULL')
      revocations = 0
      for (const { hash, revoked_at } of revoked)
        revocations += Number(revoke.run(revoked_at as string, hash as string).changes)
    }
    for (const [table, id] of given ?? []) raiseIdSequence((sql) => db.prepare(sql), table, id)
    db.exec('COMMIT')
    const held = new Set(
      db
        .prepare('SELECT hash FROM api_keys')
        .all()
        .map((row) => row.hash),
    )
    const keysNotInBackup = active?.filter((row) => !held.has(row.hash)).map((row) => String(row.name))
    const petIdsGivenUpTo = given?.find(([table]) => table === 'pets')?.[1]
    return { replacedPets, revocations, petIdsGivenUpTo, keysNotInBackup, unreadable }
  } finally {
    db.close()
  }
}
