import { randomBytes } from 'node:crypto'
import { FINISHED_MARK, UNFINISHED_MARK } from '../shared/copy-mark.ts'
import type { CopyMarks } from '../store.ts'
import type { PostgresPool } from './postgres-connection.ts'

/** The value of the setting `name`, if the database holds it; only read. */
async function storedSetting(pool: PostgresPool, name: string): Promise<string | undefined> {
  const [found] = await pool.query<{ value: string }>({
    name: 'settings.value',
    text: 'SELECT value FROM service_settings WHERE name = $1',
    values: [name],
  })
  return found?.value
}

/** The marks `petstore copy` leaves: when one started, if it has not finished, and when the last finished. */
export async function copyMarks(pool: PostgresPool): Promise<CopyMarks> {
  const rows = await pool.query<{ name: string; value: string }>({
    name: 'settings.copy-marks',
    text: 'SELECT name, value FROM service_settings WHERE name IN ($1, $2)',
    values: [UNFINISHED_MARK, FINISHED_MARK],
  })
  const stored = (name: string) => rows.find((row) => row.name === name)?.value
  return { unfinishedSince: stored(UNFINISHED_MARK), lastFinishedAt: stored(FINISHED_MARK) }
}

/** The database's signing secret if an instance has made it; only read (a `copy` source). */
export function storedSecret(pool: PostgresPool): Promise<string | undefined> {
  return storedSetting(pool, 'service_secret')
}

/**
 * The database's signing secret: created by whichever instance asks first, then the same for all. Read
 * first, so a database that has it is never written.
 */
export async function serviceSecret(pool: PostgresPool): Promise<string> {
  const found = await storedSecret(pool)
  if (found !== undefined) return found
  await pool.query({
    name: 'settings.secret-init',
    text: "INSERT INTO service_settings VALUES ('service_secret', $1) ON CONFLICT (name) DO NOTHING",
    values: [randomBytes(32).toString('base64url')],
  })
  return (await storedSecret(pool)) as string
}
