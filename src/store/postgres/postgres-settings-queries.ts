import { randomBytes } from 'node:crypto'
import type { PostgresPool } from './postgres-connection.ts'

/** The database's signing secret: created by whichever instance asks first, then the same for all. */
export async function serviceSecret(pool: PostgresPool): Promise<string> {
  await pool.query({
    name: 'settings.secret-init',
    text: "INSERT INTO service_settings VALUES ('service_secret', $1) ON CONFLICT (name) DO NOTHING",
    values: [randomBytes(32).toString('base64url')],
  })
  const [row] = await pool.query<{ value: string }>({
    name: 'settings.secret',
    text: "SELECT value FROM service_settings WHERE name = 'service_secret'",
  })
  return (row as { value: string }).value
}
