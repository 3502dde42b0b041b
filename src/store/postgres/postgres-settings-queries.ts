import { randomBytes } from 'node:crypto'
import { UNFINISHED_MARK } from '../shared/copy-mark.ts'
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

/** When a copy into this database started, if it has not finished (`petstore copy` marks and clears it). */
export function unfinishedCopy(pool: PostgresPool): Promise<string | undefined> {
  return storedSetting(pool, UNFINISHED_MARK)
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
