import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { parseEnv } from 'node:util'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCli, startServeProcess } from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { startThrowawayPostgres, throwawayPostgresSuiteOptions } from './helpers/postgres-server.ts'
import { redisSuiteOptions, startRedis } from './helpers/redis-server.ts'
import { postgresSql } from './helpers/store-engines.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { makeTestCertificates, opensslLack } from './helpers/test-certificates.ts'

const key = generateApiKey()
const bearer = { authorization: `Bearer ${key}` }

// The settings deploy/production.env shows for a database and a Redis reached over a network.
const production = parseEnv(readFileSync(new URL('../deploy/production.env', import.meta.url), 'utf8'))

/**
 * `url` with production.env's TLS parameters: TLS asked, and the server's certificate checked against `ca`
 * (the file it names there), or without it against Node's own CAs.
 */
function verifiedUrl(url: string, ca?: string): string {
  const verified = new URL(url)
  for (const [name, value] of new URL(production.DATABASE_URL ?? '').searchParams) {
    if (name !== 'sslrootcert') verified.searchParams.set(name, value)
    else if (ca !== undefined) verified.searchParams.set(name, ca)
  }
  return verified.href
}

// Each suite also signs its servers' certificates.
const certificatesMade = suiteNeeding('the TLS suites', opensslLack())

describe('TLS to PostgreSQL', { ...certificatesMade, ...throwawayPostgresSuiteOptions() }, () => {
  test("when DATABASE_URL asks for verify-full with the server's CA, then every connection of the service is encrypted and the service serves", async (t) => {
    const directory = temporaryDirectory(t)
    const certificates = makeTestCertificates(directory)
    const postgres = await startThrowawayPostgres({ tls: certificates })
    t.after(() => postgres.stop('immediate'))
    const url = await postgres.createDatabase()
    const service = await startServeProcess(
      { DATABASE_URL: verifiedUrl(url, certificates.ca), API_KEYS: `ops:${key}` },
      directory,
    )
    t.after(() => service.child.kill('SIGKILL'))
    const created = await checkedFetch(service.origin, '/v1/pets', {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: '{"name":"Rex","categoryId":1}',
    })
    assert.equal(created.status, 201, await created.text())
    const connections = await postgresSql(
      url,
      "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'petstore'",
    )
    assert.ok(connections.length > 0, 'the service holds connections')
    assert.deepEqual(
      connections.map((row) => row.ssl),
      connections.map(() => true),
      'each of them encrypted',
    )
  })

  for (const [when, certificate, said] of [
    [
      "when the server's certificate is signed by no CA the service trusts",
      'unknown CA',
      /^petstore serve: the database's TLS certificate is not signed by a CA this service trusts \([A-Z_]+\): its URL's sslrootcert must name the CA that signed it: unable to verify/,
    ],
    [
      "when the server's certificate is one no server may use",
      'client only',
      /^petstore serve: the database's TLS certificate is refused \(its signature, purpose or chain\) \(INVALID_PURPOSE\)/,
    ],
    [
      'when the CA file DATABASE_URL names is not there',
      'no CA file',
      /^petstore serve: the database URL names a file that cannot be read \(ENOENT\): .*absent-ca\.pem/,
    ],
    [
      'when DATABASE_URL asks for TLS and the server takes none',
      'no TLS',
      /^petstore serve: the database takes no TLS connections, and its URL asks for them/,
    ],
  ] as const) {
    test(`${when}, then the start fails in one line that says so`, async (t) => {
      const directory = temporaryDirectory(t)
      const certificates =
        certificate === 'no TLS'
          ? undefined
          : makeTestCertificates(directory, { clientOnly: certificate === 'client only' })
      const postgres = await startThrowawayPostgres(certificates === undefined ? {} : { tls: certificates })
      t.after(() => postgres.stop('immediate'))
      const url = await postgres.createDatabase()
      const ca = {
        'unknown CA': undefined,
        'client only': certificates?.ca,
        'no CA file': join(directory, 'absent-ca.pem'),
        'no TLS': undefined,
      }[certificate]
      const result = await runCli(['serve'], { DATABASE_URL: verifiedUrl(url, ca), PORT: '0' }, directory)
      assert.equal(result.status, 1, result.stderr)
      assert.match(result.stderr, said)
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr)
    })
  }
})

describe('TLS to Redis', { ...certificatesMade, ...redisSuiteOptions() }, () => {
  test('when REDIS_URL is rediss:// and NODE_EXTRA_CA_CERTS names the CA (as production.env has them), then the rate limit is counted in Redis over TLS', async (t) => {
    const directory = temporaryDirectory(t)
    const certificates = makeTestCertificates(directory)
    const redis = await startRedis({ tls: certificates })
    t.after(() => redis.stop())
    assert.match(redis.url, /^rediss:\/\//)
    const service = await startServeProcess(
      {
        REDIS_URL: redis.url,
        NODE_EXTRA_CA_CERTS: certificates.ca,
        RATE_LIMIT_PER_MINUTE: '2',
        API_KEYS: `ops:${key}`,
      },
      directory,
    )
    t.after(() => service.child.kill('SIGKILL'))
    // Only Redis counts (a request it cannot count passes), so a 429 shows the count reached it; a request
    // made while a loaded machine still connects is not counted, and the 429 comes a little later.
    const statuses: number[] = []
    while (statuses.length < 10 && !statuses.includes(429))
      statuses.push((await checkedFetch(service.origin, '/v1/pets', { headers: bearer })).status)
    assert.deepEqual(statuses.slice(-1), [429], `${statuses}`)
    assert.ok(statuses.slice(0, -1).every((status) => status === 200) && statuses.length >= 3, `${statuses}`)
    assert.ok((await redis.keyCount()) > 0, 'the count is in Redis')
  })

  test("when Redis's certificate is signed by no CA the service trusts, then the start fails in one line that says so", async (t) => {
    const directory = temporaryDirectory(t)
    const redis = await startRedis({ tls: makeTestCertificates(directory) })
    t.after(() => redis.stop())
    const result = await runCli(['serve'], { REDIS_URL: redis.url, PORT: '0' }, directory)
    assert.equal(result.status, 1, result.stderr)
    assert.match(
      result.stderr,
      /^petstore serve: REDIS_URL: Redis's TLS certificate is not signed by a CA this service trusts \([A-Z_]+\): NODE_EXTRA_CA_CERTS/,
    )
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr)
  })
})
