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

// Which server and database a connection reached: `--replacing` spelt otherwise than DATABASE_URL (the
// scheme, a parameter, a host's other name) may still name the database pg_restore made.
const IDENTITY = {
  name: 'carry.identity',
  text: 'SELECT system_identifier::text AS server, current_database() AS database FROM pg_control_system()',
}

/** The server's and the database's identity, or undefined where it cannot be read (nor compared). */
async function identityOf(pool: PostgresPool): Promise<string | undefined> {
  try {
    const [row] = await pool.query<{ server: string; database: string }>(IDENTITY)
    return row === undefined ? undefined : `${row.server}/${row.database}`
  } catch {
    return undefined
  }
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

/** What the replaced database passes on, each part undefined where it could not be read. */
interface Replaced {
  replacedPets: bigint | undefined
  revoked: { hash: string; revoked_at: string }[] | undefined
  given: { pets: bigint; keys: bigint } | undefined
  active: { hash: string; name: string }[] | undefined
  sessionsEnded: number
  unreadable: string | undefined
}

/** Reads what the database `replacing` passes on, once it is known not to be `restored` itself. */
async function readReplaced(replacing: string, restoredIs: string | undefined): Promise<Replaced> {
  const old = new PostgresPool(commandPool(replacing))
  const read: Replaced = {
    replacedPets: undefined,
    revoked: undefined,
    given: undefined,
    active: undefined,
    sessionsEnded: 0,
    unreadable: undefined,
  }
  const fromOld = async <T>(part: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await part()
    } catch (error) {
      read.unreadable ??= messageWithCause(error as Error)
      return undefined
    }
  }
  const highest = async (table: 'pets' | 'api_keys') =>
    (await old.query<{ id: bigint }>(highestIdGiven(table)))[0]?.id ?? 0n
  try {
    // Before anything is ended or read: its sessions would be the restored database's own.
    if (restoredIs !== undefined && restoredIs === (await identityOf(old)))
      throw new Error(
        '--replacing names the database DATABASE_URL names (spelt another way): name the database the ' +
          'restored one replaces: nothing was changed',
      )
    const serving = await fromOld(async () => (await old.query<ServingSessions>(SERVING_SESSIONS))[0])
    if (serving !== undefined && serving.sessions > 0n) {
      if (serving.read_only !== 'on') throw inUse(serving.sessions, '')
      read.sessionsEnded = await endSessions(old, serving.sessions)
    }
    const count = { name: 'carry.pets', text: 'SELECT count(*) AS n FROM pets' }
    read.replacedPets = await fromOld(async () => (await old.query<{ n: bigint }>(count))[0]?.n ?? 0n)
    read.revoked = await fromOld(() =>
      old.query<{ hash: string; revoked_at: string }>({
        name: 'carry.revoked',
        text: `SELECT hash, ${exactUtc('revoked_at')} FROM api_keys WHERE revoked_at IS NOT NULL`,
      }),
    )
    read.given = await fromOld(async () => ({ pets: await highest('pets'), keys: await highest('api_keys') }))
    read.active = await fromOld(() =>
      old.query<{ hash: string; name: string }>({
        name: 'carry.active',
        text: 'SELECT hash, name FROM api_keys WHERE revoked_at IS NULL ORDER BY id',
      }),
    )
    return read
  } finally {
    await old.close()
  }
}

/**
 * Carries into `restored` (pg_restore's, not yet served) what must outlive a restore, from `replacing`, as
 * SQLite's restore does: revocations and id sequences, each part read apart; keys made since only counted
 * (docs/decisions.md, "PostgreSQL: pg_dump, not our command"). Failures to reach or write `restored` throw.
 */
export async function carryForward(replacing: string, restored: string): Promise<CarriedForward> {
  const db = new PostgresPool(commandPool(restored))
  try {
    const { replacedPets, revoked, given, active, sessionsEnded, unreadable } = await readReplaced(
      replacing,
      await identityOf(db),
    )
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
