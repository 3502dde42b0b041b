import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { call } from './helpers/api-client.ts'
import { sharedPostgres } from './helpers/postgres-server.ts'
import { engineSuiteOptions, postgresEngine, postgresSql, postgresStoreAt } from './helpers/store-engines.ts'
import { startTestServer, type TestServer } from './helpers/test-server.ts'

/** Each operation is answered 503 with Retry-After, naming nothing of the database's internals. */
async function assertEachOperationUnavailable(server: TestServer): Promise<void> {
  for (const [method, path] of [
    ['GET', '/v1/pets'],
    ['GET', '/v1/pets/1'],
    ['POST', '/v1/pets'],
  ] as const) {
    const answer = await call(
      server,
      method,
      path,
      method === 'POST' ? { body: { name: 'Rex', categoryId: 1 } } : {},
    )
    assert.equal(answer.status, 503, `${method} ${path}: ${answer.text}`)
    assert.equal(answer.json.code, 'service_unavailable')
    assert.equal(answer.headers.get('retry-after'), '1')
    assert.doesNotMatch(answer.text, /relation|column|pets_|pet_name|api_keys/, 'no internals')
  }
}

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

  test('when the Pet Store tables are dropped under a running instance (a pg_restore --clean under way, a database made again), then calls get 503 with Retry-After, never a 500, and readiness says the schema is missing', async (t) => {
    const server = await startTestServer(t, { engine: postgresEngine })
    assert.equal(
      (await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } })).status,
      201,
    )
    const tables = await postgresSql(
      server.databaseUrl as string,
      "SELECT string_agg(quote_ident(tablename), ', ') AS names FROM pg_tables WHERE schemaname = current_schema()",
    )
    await postgresSql(server.databaseUrl as string, `DROP TABLE ${tables[0]?.names} CASCADE`)
    await assertEachOperationUnavailable(server)
    const readiness = await call(server, 'GET', '/readyz', { key: false })
    assert.equal(readiness.status, 503)
    assert.match(readiness.json.message, /^not ready: the database lacks the Pet Store schema/)
  })

  test("when a column the service's statements name is renamed under a running instance (another tool's migration), then calls get 503 with Retry-After, never a 500", async (t) => {
    const server = await startTestServer(t, { engine: postgresEngine })
    assert.equal(
      (await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } })).status,
      201,
    )
    await postgresSql(server.databaseUrl as string, 'ALTER TABLE pets RENAME COLUMN name TO pet_name')
    await assertEachOperationUnavailable(server)
  })
})
