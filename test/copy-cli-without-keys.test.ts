import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { runCli, startServeProcess } from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { rowCount } from './helpers/sqlite-file.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

// `petstore copy` between two SQLite files, as an operator runs it: a staging copy (--without-keys). The
// stores it refuses and a failed or stopped copy have files of their own (copy-cli-*.test.ts), as have the
// engines' copies (copy-*.test.ts).
describe('petstore copy, SQLite to SQLite', () => {
  test('when a copy is made --without-keys (a staging copy of production), then every pet is there and no key, so no production key works on it', async (t) => {
    const cwd = temporaryDirectory(t)
    const production = { DATABASE_URL: 'sqlite:production.db' }
    assert.equal((await runCli(['seed', '--count', '30'], production, cwd)).status, 0)
    const created = await runCli(['keys', 'create', '--name', 'ops'], production, cwd)
    assert.equal(created.status, 0, created.stderr)
    const key = created.stdout.trim()
    const copy = await runCli(
      ['copy', '--from', 'sqlite:production.db', '--to', 'sqlite:staging.db', '--without-keys'],
      {},
      cwd,
    )
    assert.equal(copy.status, 0, copy.stderr)
    assert.match(
      copy.stdout,
      /^copied 30 pets, no API key copied \(--without-keys\), 0 idempotency records in /,
    )
    const staging = new DatabaseSync(join(cwd, 'staging.db'), { readOnly: true })
    t.after(() => staging.close())
    const count = (table: string) => Number(staging.prepare(`SELECT count(*) AS n FROM ${table}`).get()?.n)
    assert.deepEqual([count('pets'), count('api_keys'), count('idempotency_keys')], [30, 0, 0])
    const server = await startServeProcess({ DATABASE_URL: 'sqlite:staging.db' }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    const listed = await checkedFetch(server.origin, '/v1/pets', {
      headers: { authorization: `Bearer ${key}` },
    })
    assert.equal(listed.status, 401)
  })

  test("when a copy --without-keys is run over an earlier full copy, whose target still holds the source's keys active, then exit 1 with one line saying how many and what to do, nothing copied; once they are revoked there, it copies", async (t) => {
    const cwd = temporaryDirectory(t)
    const production = { DATABASE_URL: 'sqlite:production.db' }
    assert.equal((await runCli(['seed', '--count', '30'], production, cwd)).status, 0)
    for (const name of ['ops', 'ci'])
      assert.equal((await runCli(['keys', 'create', '--name', name], production, cwd)).status, 0)
    const args = ['copy', '--from', 'sqlite:production.db', '--to', 'sqlite:staging.db']
    assert.equal((await runCli(args, {}, cwd)).status, 0)
    assert.equal((await runCli(['seed', '--count', '5'], production, cwd)).status, 0)

    const refused = await runCli([...args, '--without-keys'], {}, cwd)
    assert.deepEqual(
      [refused.status, refused.stdout, refused.stderr],
      [
        1,
        '',
        "petstore copy: the target holds 2 of the source's API keys active (ops, ci), which --without-keys " +
          'would leave working there: revoke them on the target (petstore keys revoke NAME), or copy into ' +
          'a new database\n',
      ],
    )
    assert.equal(rowCount(join(cwd, 'staging.db'), 'pets'), 30, 'nothing copied')

    for (const name of ['ops', 'ci'])
      assert.equal(
        (await runCli(['keys', 'revoke', name], { DATABASE_URL: 'sqlite:staging.db' }, cwd)).status,
        0,
      )
    const copied = await runCli([...args, '--without-keys'], {}, cwd)
    assert.equal(copied.status, 0, copied.stderr)
    assert.match(copied.stdout, /^copied 5 pets, no API key copied \(--without-keys\), /)
  })
})
