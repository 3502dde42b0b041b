import { messageWithCause } from '../../errors.ts'
import type { CarriedForward } from '../shared/backup-role.ts'
import { PostgresPool } from './postgres-connection.ts'
import { commandPool } from './postgres-pool-config.ts'
import { highestIdGiven, raiseIdSequence } from './postgres-sequences.ts'
import { exactUtc } from './postgres-statements.ts'

interface ServingSessions {
  sessions: bigint
  read_only: string
}

// Sessions of the service (or its commands) on the replaced database, other than this one: what they
// write after the carry is lost, and a pet they create takes an id the restored database gives again. A
// database read-only for new sessions (as this one's setting shows) lets them read on (README, "Running
// instances after a restore"). Behind a pooler whose sessions do not carry the name, none are seen.
const SERVICE_SESSIONS = `FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = 'petstore'`
const SERVING_SESSIONS = {
  name: 'carry.serving',
  text: `SELECT count(*) AS sessions, current_setting('default_transaction_read_only') AS read_only
    ${SERVICE_SESSIONS}`,
}
// A database made read-only binds new sessions only: one opened before could still write. Each is ended
// (waiting up to 5 s for it to go) before anything is read; its instance connects again, read-only.
const END_SESSIONS = {
  name: 'carry.end-sessions',
  text: `SELECT count(*) AS sessions, count(*) FILTER (WHERE ended) AS ended
    FROM (SELECT pg_terminate_backend(pid, 5000) AS ended ${SERVICE_SESSIONS}) AS terminated`,
}

/** The refusal while sessions of the service are connected to the replaced database: nothing is changed. */
function inUse(sessions: bigint, why: string): Error {
  return new Error(
    `the database it replaces is in use by ${sessions} session${sessions === 1n ? '' : 's'} of the service` +
      `${why}: stop the instances on it, or make it read-only for the service's role (ALTER DATABASE … SET ` +
      'default_transaction_read_only = on) and end their sessions: nothing was changed',
  )
}

/** Ends the service's sessions on a database read-only for new ones, and answers how many were ended. */
async function endSessions(old: PostgresPool, seen: bigint): Promise<number> {
  let counts: { sessions: bigint; ended: bigint } | undefined
  try {
    counts = (await old.query<{ sessions: bigint; ended: bigint }>(END_SESSIONS))[0]
  } catch (error) {
    throw inUse(seen, ` (ending them here failed: ${(error as Error).message})`)
  }
  const { sessions = 0n, ended = 0n } = counts ?? {}
  if (ended < sessions)
    throw inUse(sessions - ended, ' (ending them here failed: one is still there after 5 s)')
  return Number(ended)
}

/**
 * Keeps in the database `restored` (pg_restore's, not yet served) what must outlive a restore, read from
 * the database it replaces (`replacing`), as SQLite's restore does (sqlite-restore-carry.ts): a key
 * revoked there stays revoked, and the id sequences stay above every id given out there. Keys made since
 * the dump are only counted. Each part is read apart, so a damaged database still gives what it can; a
 * failure to reach or write `restored` is thrown, and so is a replaced database the service still writes to.
 */
export async function carryForward(replacing: string, restored: string): Promise<CarriedForward> {
  let unreadable: string | undefined
  const old = new PostgresPool(commandPool(replacing))
  const fromOld = async <T>(read: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await read()
    } catch (error) {
      unreadable ??= messageWithCause(error as Error)
      return undefined
    }
  }
  const highest = async (table: 'pets' | 'api_keys') =>
    (await old.query<{ id: bigint }>(highestIdGiven(table)))[0]?.id ?? 0n
  let replacedPets: bigint | undefined
  let revoked: { hash: string; revoked_at: string }[] | undefined
  let given: { pets: bigint; keys: bigint } | undefined
  let active: { hash: string; name: string }[] | undefined
  let sessionsEnded = 0
  try {
    const serving = await fromOld(async () => (await old.query<ServingSessions>(SERVING_SESSIONS))[0])
    if (serving !== undefined && serving.sessions > 0n) {
      if (serving.read_only !== 'on') throw inUse(serving.sessions, '')
      sessionsEnded = await endSessions(old, serving.sessions)
    }
    const count = { name: 'carry.pets', text: 'SELECT count(*) AS n FROM pets' }
    replacedPets = await fromOld(async () => (await old.query<{ n: bigint }>(count))[0]?.n ?? 0n)
    revoked = await fromOld(() =>
      old.query<{ hash: string; revoked_at: string }>({
        name: 'carry.revoked',
        text: `SELECT hash, ${exactUtc('revoked_at')} FROM api_keys WHERE revoked_at IS NOT NULL`,
      }),
    )
    given = await fromOld(async () => ({ pets: await highest('pets'), keys: await highest('api_keys') }))
    active = await fromOld(() =>
      old.query<{ hash: string; name: string }>({
        name: 'carry.active',
        text: 'SELECT hash, name FROM api_keys WHERE revoked_at IS NULL ORDER BY id',
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
    const keysNotInBackup = active?.filter((row) => !held.has(row.hash)).map((row) => row.name)
    const petIdsGivenUpTo = given?.pets
    return { replacedPets, sessionsEnded, revocations, petIdsGivenUpTo, keysNotInBackup, unreadable }
  } finally {
    await db.close()
  }
}
