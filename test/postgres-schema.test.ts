import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sharedPostgres } from './helpers/postgres-server.ts'
import { engineSuiteOptions, postgresEngine, postgresSql, postgresStoreAt } from './helpers/store-engines.ts'

describe('the service schema on a shared PostgreSQL database', engineSuiteOptions(postgresEngine), () => {
  test("when another application's schema_migrations is further along the search path, then the service makes its own and leaves that one alone", async (t) => {
    const url = await (await sharedPostgres()).createDatabase()
    const database = new URL(url).pathname.slice(1)
    // The service's schema first and empty; another tool's bookkeeping table (golang-migrate's shape) after it.
    await postgresSql(url, 'CREATE SCHEMA svc; CREATE SCHEMA other')
    await postgresSql(
      url,
      'CREATE TABLE other.schema_migrations (version bigint PRIMARY KEY, dirty boolean NOT NULL)',
    )
    await postgresSql(url, `ALTER DATABASE "${database}" SET search_path = svc, other`)
    const store = postgresStoreAt(url, 2)
    t.after(() => store.close())
    const report = await store.migrate()
    assert.equal(report.current, report.latest)
    const columns = await postgresSql(
      url,
      "SELECT table_schema, column_name FROM information_schema.columns WHERE table_name = 'schema_migrations' ORDER BY 1, 2",
    )
    assert.deepEqual(
      columns.filter((row) => row.table_schema === 'other').map((row) => row.column_name),
      ['dirty', 'version'],
      "the other application's table is as it was",
    )
    assert.ok(columns.some((row) => row.table_schema === 'svc' && row.column_name === 'compatible_from'))
    assert.equal((await postgresSql(url, 'SELECT count(*)::int AS n FROM other.schema_migrations'))[0]?.n, 0)
  })
})
