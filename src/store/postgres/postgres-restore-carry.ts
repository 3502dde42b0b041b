import type { CarriedForward } from '../shared/backup-role.ts'
import { PostgresPool } from './postgres-connection.ts'
import { commandPool } from './postgres-pool-config.ts'
import { highestIdGiven, raiseIdSequence } from './postgres-sequences.ts'

/**
 * Keeps in the database `restored` (pg_restore's, not yet served) what must outlive a restore, read from
 * the database it replaces (`replacing`), as SQLite's restore does (sqlite-restore-carry.ts): a key
 * revoked there stays revoked, and the id sequences stay above every id given out there. Keys made since
 * the dump are only counted. Each part is read apart, so a damaged database still gives what it can; a
 * failure to reach or write `restored` is thrown.
 */
export async function carryForward(replacing: string, restored: string): Promise<CarriedForward> {
  let unreadable: string | undefined
  const old = new PostgresPool(commandPool(replacing))
  const fromOld = async <T>(read: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await read()
    } catch (error) {
      unreadable ??= (error as Error).message
      return undefined
    }
  }
  const highest = async (table: 'pets' | 'api_keys') =>
    (await old.query<{ id: bigint }>(highestIdGiven(table)))[0]?.id ?? 0n
  let replacedPets: bigint | undefined
  let revoked: { hash: string; revoked_at: string }[] | undefined
  let given: { pets: bigint; keys: bigint } | undefined
  let active: { hash: string }[] | undefined
  try {
    const count = { name: 'carry.pets', text: 'SELECT count(*) AS n FROM pets' }
    replacedPets = await fromOld(async () => (await old.query<{ n: bigint }>(count))[0]?.n ?? 0n)
    revoked = await fromOld(() =>
      old.query<{ hash: string; revoked_at: string }>({
        name: 'carry.revoked',
        text: `SELECT hash, to_char(revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS revoked_at
          FROM api_keys WHERE revoked_at IS NOT NULL`,
      }),
    )
    given = await fromOld(async () => ({ pets: await highest('pets'), keys: await highest('api_keys') }))
    active = await fromOld(() =>
      old.query<{ hash: string }>({
        name: 'carry.active',
        text: 'SELECT hash FROM api_keys WHERE revoked_at IS NULL',
      }),
    )
  } finally {
    await old.close()
  }

  const db = new PostgresPool(commandPool(restored))
  try {
    const revocations = await db.transaction(async (client) => {
      const revokedHere =
        revoked === undefined
          ? undefined
          : ((
              await client.query(
                `UPDATE api_keys k SET revoked_at = r.revoked_at
                   FROM unnest($1::text[], $2::timestamptz[]) AS r(hash, revoked_at)
                   WHERE k.hash = r.hash AND k.revoked_at IS NULL`,
                [revoked.map((row) => row.hash), revoked.map((row) => row.revoked_at)],
              )
            ).rowCount ?? 0)
      if (given !== undefined) {
        for (const [table, id] of [
          ['pets', given.pets],
          ['api_keys', given.keys],
        ] as const) {
          const { text, values } = raiseIdSequence(table, id)
          await client.query(text, values)
        }
      }
      return revokedHere
    })
    const held = new Set(
      (await db.query<{ hash: string }>({ name: 'carry.held', text: 'SELECT hash FROM api_keys' })).map(
        (row) => row.hash,
      ),
    )
    const keysNotInBackup = active?.filter((row) => !held.has(row.hash)).length
    return { replacedPets, revocations, idsKept: given !== undefined, keysNotInBackup, unreadable }
  } finally {
    await db.close()
  }
}
