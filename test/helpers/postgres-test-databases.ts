import { createHash, randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import pg from 'pg'
import { isRunning } from './process-children.ts'

// Every database a test makes is named after this host and process: on a server the tests share with
// other runs (PETSTORE_TEST_POSTGRES_URL), a later test process can tell which ones nobody uses any more.
const PREFIX = 'petstore_test_'
const HOST = createHash('sha256').update(hostname()).digest('hex').slice(0, 8)
const NAME = /^petstore_test_([0-9a-f]{8})_(\d+)_[0-9a-f]{8}$/

/**
 * Makes fresh, empty databases on the server at `adminUrl`, returning each one's URL. With `sweep` (a
 * server not thrown away with the tests), its first call drops the databases made by test processes of this
 * host that have ended, so a developer's server keeps at most those of the runs still going or last killed.
 */
export function databaseFactory(adminUrl: string, { sweep }: { sweep: boolean }): () => Promise<string> {
  let swept = !sweep
  return async () => {
    const name = `${PREFIX}${HOST}_${process.pid}_${randomBytes(4).toString('hex')}`
    const client = new pg.Client({ connectionString: adminUrl })
    await client.connect()
    try {
      if (!swept) {
        swept = true
        await dropEnded(client)
      }
      await client.query(`CREATE DATABASE ${name}`)
    } finally {
      await client.end()
    }
    const url = new URL(adminUrl)
    url.pathname = `/${name}`
    return url.toString()
  }
}

async function dropEnded(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ datname: string }>(
    'SELECT datname FROM pg_database WHERE starts_with(datname, $1)',
    [PREFIX],
  )
  for (const { datname } of rows) {
    const found = NAME.exec(datname)
    // Another host's process ids say nothing here; a name of another form is not the tests' of today.
    if (found?.[1] !== HOST || isRunning(Number(found[2]))) continue
    // Another test process sweeping at the same time may have dropped it already.
    await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => undefined)
  }
}
