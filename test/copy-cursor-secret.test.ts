import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { waitUntil } from './helpers/bounded-wait.ts'
import { runCli, stop } from './helpers/cli-process.ts'
import { call, serve } from './helpers/store-copy-fixtures.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

/** The next link's path and query on a page of `limit` pets, from `server`. */
async function nextOf(server: Parameters<typeof call>[0], key: string, path: string): Promise<string> {
  const response = await call(server, key, path)
  assert.equal(response.status, 200, path)
  const next = /<([^>]+)>; rel="next"/.exec(response.headers.get('link') ?? '')?.[1]
  assert.ok(next !== undefined, `a next link on ${path}`)
  const url = new URL(next, server.origin)
  return url.pathname + url.search
}

// A copy brings its source's cursor secret (README, "Moving to PostgreSQL"): a service already serving
// the target reads it again with the copy marks, so walks begun on the source go on there.
describe('petstore copy into a store a server is serving, and the paging cursors', () => {
  test('when the copy ends, then a cursor the source gave continues on the target within the marks check, and one the target gives then continues on the source', {
    timeout: 60_000,
  }, async (t) => {
    const from = temporaryDirectory(t)
    const into = temporaryDirectory(t)
    const sourceUrl = `sqlite:${join(from, 'source.db')}`
    const targetUrl = `sqlite:${join(into, 'target.db')}`
    assert.equal((await runCli(['seed', '--count', '30'], { DATABASE_URL: sourceUrl }, from)).status, 0)
    const source = await serve(t, { DATABASE_URL: sourceUrl }, from)
    const sourceKey = readFileSync(join(from, 'initial-api-key'), 'utf8').trim()
    const sourceCursor = await nextOf(source, sourceKey, '/v1/pets?limit=5')
    await stop(source)

    const target = await serve(t, { DATABASE_URL: targetUrl }, into)
    const targetKey = readFileSync(join(into, 'initial-api-key'), 'utf8').trim()
    const copied = await runCli(
      ['copy', '--from', sourceUrl, '--to', targetUrl, '--into-non-empty', '--without-keys'],
      {},
      into,
    )
    assert.equal(copied.status, 0, copied.stderr)

    let status = 0
    await waitUntil(
      async () => {
        status = (await call(target, targetKey, sourceCursor)).status
        return status === 200
      },
      () => `the source's cursor answered ${status}`,
      { timeoutMs: 15_000, everyMs: 500 },
    )
    // A cursor it gives now is signed with the copied secret: the source's servers take it.
    const given = await nextOf(target, targetKey, '/v1/pets?limit=5')
    await stop(target)
    const again = await serve(t, { DATABASE_URL: sourceUrl }, from)
    assert.equal((await call(again, sourceKey, given)).status, 200, "the target's new cursor on the source")
    await stop(again)
  })
})
