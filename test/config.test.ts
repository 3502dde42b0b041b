import assert from 'node:assert/strict'
import { availableParallelism } from 'node:os'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { loadConfig } from '../src/config.ts'
import { ConfigSchema } from '../src/config-schema.ts'
import { ConfigError } from '../src/errors.ts'

describe('configuration', () => {
  test('when nothing is set, then the defaults serve the embedded store on localhost:8080', () => {
    const config = loadConfig({})
    assert.equal(config.server.host, '127.0.0.1')
    assert.equal(config.server.port, 8080)
    assert.equal(config.database.engine, 'sqlite')
    assert.equal(config.database.engine === 'sqlite' && config.database.path, 'data/petstore.db')
    assert.equal(config.baseUrls.publicBaseUrl, '/v1', 'relative unless configured')
    assert.equal(config.http.bodyLimitBytes, 4096)
    assert.ok(Object.isFrozen(config))
  })

  const bad: Array<[Record<string, string>, RegExp]> = [
    [
      { PORT: 'abc' },
      /^PORT must be an integer from 0 to 65535, written without a plus sign, .* \(got "abc"\)$/,
    ],
    // In range, but not written plainly: the rule says how it must be written.
    [
      { PORT: '08080' },
      /^PORT must be .*, written without a plus sign, leading zeros, a fraction or an exponent/,
    ],
    [{ PORT: '70000' }, /^PORT must be an integer from 0 to 65535/],
    [{ PORT: '80.5' }, /^PORT must be an integer/],
    [{ PORT: ' 80' }, /^PORT must be an integer/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of: fatal, error, warn, info, debug, trace, silent/],
    [
      { PUBLIC_BASE_URL: 'https://api.example.com' },
      /^PUBLIC_BASE_URL must be an http:\/\/ or https:\/\/ URL ending in \/v1, without credentials, query or fragment \(got "https:\/\/api.example.com"\)$/,
    ],
    [
      { STAGING_BASE_URL: 'ftp://x/v1' },
      /^STAGING_BASE_URL must be an http:\/\/ or https:\/\/ URL ending in \/v1/,
    ],
    [{ BODY_LIMIT_BYTES: '10' }, /^BODY_LIMIT_BYTES must be an integer from 256 to 1048576/],
    [
      { DATABASE_URL: 'mysql://x' },
      /^DATABASE_URL must be sqlite: followed by a file path \(not a file: URI; \.\/file:… for a file so named; sqlite::memory: for a throwaway store\), or a valid postgres:\/\/ or postgresql:\/\/ URL$/,
    ],
    // SQLite would read it as a URI (its options, its escapes), and make the file as the umask says.
    [
      { DATABASE_URL: 'sqlite:file:data/petstore.db?mode=rwc' },
      /^DATABASE_URL must be sqlite: followed by a file path \(not a file: URI; \.\/file:… for a file so named; sqlite::memory: for a throwaway store\), or a valid postgres:\/\/ or postgresql:\/\/ URL$/,
    ],
    // The client would take an sslmode it does not know as TLS with the certificate checked; libpq refuses it.
    [
      { DATABASE_URL: 'postgres://app:secret@db/pets?sslmode=verify-full&sslmode=verify_full' },
      /^DATABASE_URL has sslmode "verify_full", which is none of disable, prefer, require, verify-ca, verify-full, no-verify$/,
    ],
    [{ REDIS_URL: 'http://cache:6379' }, /^REDIS_URL must be a valid redis:\/\/ or rediss:\/\/ URL$/],
    // The client would read the database as NaN (or 1 from `1x`), and its SELECT fail unhandled at every
    // connect, ending the process.
    ...[
      'redis://cache:6379/staging',
      'redis://:s3cret@cache:6379/1x',
      'rediss://cache:6379/0/',
      'redis://cache:6379?db=abc',
      'redis://cache:6379/?db=',
      'redis://cache:6379/2?db=3',
    ].map(
      (value) =>
        [
          { REDIS_URL: value },
          /^REDIS_URL must name its database by number, from 0, as its path \(redis:\/\/host:6379\/1\) or db=, once$/,
        ] as [Record<string, string>, RegExp],
    ),
    [{ WORKERS: 'all' }, /^WORKERS must be auto, or a whole number from 1 to 999 \(got "all"\)$/],
    [{ API_KEYS: 'ci:not-a-key' }, /^API_KEYS must be name:key pairs separated by commas/],
    [
      { TRUSTED_PROXIES: '10.0.0.0/33' },
      /^TRUSTED_PROXIES must be IP addresses, CIDR ranges .* separated by commas \(got "10.0.0.0\/33"\)$/,
    ],
    [{ TRUSTED_PROXIES: 'lb.internal' }, /^TRUSTED_PROXIES must be IP addresses, CIDR ranges/],
    [{ TRUSTED_PROXIES: '10.0.0.1/8/8' }, /^TRUSTED_PROXIES must be IP addresses, CIDR ranges/],
    [{ TRUSTED_PROXIES: '::1/129' }, /^TRUSTED_PROXIES must be IP addresses, CIDR ranges/],
    [{ WORKERS: '1000' }, /^WORKERS must be auto, or a whole number from 1 to 999 \(got "1000"\)$/],
    // As DATABASE_URL's: the space is named, the value (its password) never echoed.
    [
      { REDIS_URL: ' redis://:s3cret@cache:6379' },
      /^REDIS_URL must not begin or end with white space \(got " " at its start\)$/,
    ],
    [
      { REDIS_URL: 'redis://cache:6379 ' },
      /^REDIS_URL must not begin or end with white space \(got " " at its end\)$/,
    ],
    // A wildcard or `null` lets any page (a sandboxed one, a file) call with a key; a path matches nothing.
    ...['*', 'null', 'https://app.example.com/', 'app.example.com', 'https://a.example,ftp://b.example'].map(
      (value) =>
        [
          { CORS_ORIGINS: value },
          /^CORS_ORIGINS must be origins \(https:\/\/app\.example\.com, http:\/\/localhost:3000: a scheme, a host, a port if not the scheme's own, no path\), separated by commas/,
        ] as [Record<string, string>, RegExp],
    ),
  ]
  for (const [env, message] of bad) {
    test(`when ${JSON.stringify(env)}, then loading fails naming the variable and the rule`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: Error) => error instanceof ConfigError && message.test(error.message),
      )
    })
  }

  test('when any setting breaks its rule, then the message states the allowed form in words, never as a regular expression', () => {
    // Every setting, whatever its schema (strings, numbers, enums): none takes this value but free text.
    // No space around it: DATABASE_URL refuses that before its form, naming the space.
    const settings = Object.keys(ConfigSchema.properties)
    const worded: string[] = []
    for (const name of settings) {
      let message = ''
      try {
        loadConfig({ [name]: '!' })
      } catch (error) {
        message = (error as Error).message
      }
      // A setting that takes any text (HOST, CORS_ORIGINS…) accepts this value: nothing to word.
      if (message === '') continue
      worded.push(name)
      assert.match(message, new RegExp(`^${name} must be `), message)
      assert.doesNotMatch(message, /[\^$\\[\]]|\.\+|\(\?/, `${name}: ${message}`)
    }
    // The enums and numbers among them, which a string-only walk missed.
    for (const name of ['DOCS', 'SQLITE_WRITE_THREAD', 'PORT', 'LOG_LEVEL'])
      assert.ok(worded.includes(name), name)
  })

  test('when API_KEYS gives a name twice, or one key under two names, then loading fails naming the entries, never the key', () => {
    const key = generateApiKey()
    for (const [setting, message] of [
      [`dup:${generateApiKey()},ok:${generateApiKey()},dup:${key}`, '"dup" is given twice'],
      [`a:${key},b:${generateApiKey()},c:${key}`, 'each key once: "a" and "c" give the same key'],
    ] as const) {
      assert.throws(
        () => loadConfig({ API_KEYS: setting }),
        (error: Error) =>
          error instanceof ConfigError &&
          error.message.startsWith('API_KEYS must give each ') &&
          error.message.endsWith(message) &&
          !error.message.includes(key),
      )
    }
  })

  test('when API_KEYS or DATABASE_URL is wrong, then the error does not echo its value', () => {
    const key = generateApiKey()
    assert.throws(
      () => loadConfig({ API_KEYS: `bad name:${key}` }),
      (error: Error) => !error.message.includes(key),
    )
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'mysql://user:hunter2@db/x' }),
      (error: Error) => !error.message.includes('hunter2'),
    )
  })

  test('when DATABASE_URL, REDIS_URL or a base URL is not a URL that parses (a bad host, a port out of range), or a base URL holds credentials, then the error names the setting, not "Invalid URL", and never the password', () => {
    for (const [name, value] of [
      ['PUBLIC_BASE_URL', 'https://x:99999/v1'],
      ['PRODUCTION_BASE_URL', 'http://[::1/v1'],
      ['STAGING_BASE_URL', 'https://deploy:hunter2@staging.example.com/v1'],
      ['PUBLIC_BASE_URL', 'https://deploy@api.example.com/v1'],
      ['DATABASE_URL', 'postgres://u:hunter2@[bad/petstore'],
      ['DATABASE_URL', 'postgresql://u:hunter2@db:99999/petstore'],
      ['REDIS_URL', 'redis://:hunter2@[bad'],
      ['REDIS_URL', 'rediss://cache:70000'],
    ] as const) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (error: Error) =>
          error instanceof ConfigError &&
          error.message.startsWith(`${name} must be `) &&
          error.message.includes('URL') &&
          !error.message.includes('hunter2'),
        `${name}=${value}`,
      )
    }
  })

  test('when REDIS_URL names its database by number (its path or db=) or names none, then it is taken', () => {
    for (const url of [
      'redis://cache:6379',
      'redis://cache:6379/',
      'rediss://:s3cret@cache:6379/15',
      'redis://cache:6379?db=2',
      'redis://cache:6379/?db=0',
    ]) {
      assert.equal(loadConfig({ REDIS_URL: url }).rateLimit.redisUrl, url, url)
    }
  })

  test('when DATABASE_URL names a Unix socket with no host (postgres://user@/db?host=/run/postgresql), then it is taken, as the PostgreSQL client reads it', () => {
    for (const url of [
      'postgres://petstore@/petstore?host=/run/postgresql',
      'postgresql://petstore:secret@/petstore?host=/run/postgresql',
      'postgres:///petstore?host=/run/postgresql',
    ]) {
      assert.equal(loadConfig({ DATABASE_URL: url }).database.engine, 'postgres', url)
    }
  })

  test('when API_KEYS has spaces around its commas, or a comma at its end, then each pair is read, as in the other list settings', () => {
    const [a, b] = [generateApiKey(), generateApiKey()]
    assert.deepEqual(loadConfig({ API_KEYS: ` ci:${a}, deploy.prod:${b} ,` }).apiKeys, [
      { name: 'ci', key: a },
      { name: 'deploy.prod', key: b },
    ])
  })

  test('when API_KEYS holds several pairs, then each is read', () => {
    const [a, b] = [generateApiKey(), generateApiKey()]
    assert.deepEqual(loadConfig({ API_KEYS: `ci:${a},deploy.prod:${b}` }).apiKeys, [
      { name: 'ci', key: a },
      { name: 'deploy.prod', key: b },
    ])
  })

  test('when settings are loaded, then they come decoded: lists, milliseconds, the engine, the worker count', () => {
    const config = loadConfig({
      CORS_ORIGINS: 'https://a.example, https://b.example,',
      IDEMPOTENCY_RETENTION_S: '120',
      DATABASE_URL: 'postgres://db.internal/petstore',
      PG_POOL_SIZE: '4',
      METRICS: 'off',
      DOCS: 'off',
      WORKERS: '3',
      TRUSTED_PROXIES: ' 10.0.0.1, fd00::/8 ,uniquelocal,',
    })
    assert.deepEqual(config.http.corsOrigins, ['https://a.example', 'https://b.example'])
    assert.deepEqual(config.http.trustedProxies, ['10.0.0.1', 'fd00::/8', 'uniquelocal'])
    assert.deepEqual(loadConfig({}).http.trustedProxies, [], 'no proxy trusted unless listed')
    assert.equal(config.api.idempotencyRetentionMs, 120_000)
    assert.equal(config.database.engine, 'postgres')
    assert.equal(config.database.engine === 'postgres' && config.database.poolSize, 4)
    assert.equal(config.metrics, undefined)
    assert.equal(config.docs, false)
    assert.equal(config.workers, 3)
    assert.equal(loadConfig({ WORKERS: 'auto' }).workers, availableParallelism())
    const memory = loadConfig({ DATABASE_URL: 'sqlite::memory:' }).database
    assert.equal(memory.engine === 'sqlite' && memory.dataDirectory, undefined, 'no file, no directory')
    assert.ok(Object.isFrozen(config.http.corsOrigins), 'frozen all the way down')
  })

  test('when the headers timeout is longer than the whole-request timeout, then the start stops', () => {
    assert.throws(
      () => loadConfig({ HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '10000' }),
      (error: Error) =>
        error instanceof ConfigError && /HEADERS_TIMEOUT_MS must be at most/.test(error.message),
    )
    assert.equal(
      loadConfig({ HEADERS_TIMEOUT_MS: '400000', REQUEST_TIMEOUT_MS: '0' }).http.headersTimeoutMs,
      400000,
    )
  })

  test('when KEEP_ALIVE_TIMEOUT_MS is 0, then the start stops, naming it (the framework would take 0 for 72 s)', () => {
    assert.throws(
      () => loadConfig({ KEEP_ALIVE_TIMEOUT_MS: '0' }),
      (error: Error) =>
        error instanceof ConfigError &&
        /^KEEP_ALIVE_TIMEOUT_MS must be an integer from 1 to 3600000, written .* \(got "0"\)$/.test(
          error.message,
        ),
    )
    assert.equal(loadConfig({ KEEP_ALIVE_TIMEOUT_MS: '1' }).http.keepAliveTimeoutMs, 1)
  })

  test('when TRUSTED_PROXIES names single hosts as /32 and /128 ranges, then they load', () => {
    assert.doesNotThrow(() => loadConfig({ TRUSTED_PROXIES: '192.0.2.1/32, ::1/128' }))
  })

  test("when the metrics listener would take the API's own port, then the start stops, naming both settings", () => {
    const clash =
      /^METRICS_PORT must differ from PORT when both listen on the same address \(got 8080 for both; METRICS=off switches the listener off\)$/
    for (const env of [
      { METRICS_PORT: '8080' },
      { METRICS_PORT: '8080', HOST: '0.0.0.0' },
      { METRICS_PORT: '8080', METRICS_HOST: '::' },
      { METRICS_PORT: '8080', HOST: 'localhost' },
      { METRICS_PORT: '8080', METRICS_HOST: '::ffff:127.0.0.1' },
      { METRICS_PORT: '8080', HOST: '::1', METRICS_HOST: '0::1' },
      { METRICS_PORT: '8080', HOST: '0.0.0.0', METRICS_HOST: '10.0.0.5' },
      { METRICS_PORT: '8080', HOST: '127.0.0.1', METRICS_HOST: '0.0.0.0' },
    ]) {
      assert.throws(
        () => loadConfig(env),
        (error: Error) => error instanceof ConfigError && clash.test(error.message),
        JSON.stringify(env),
      )
    }
    // Two different addresses can each have their own listener on the same port; port 0 is any free port.
    assert.equal(loadConfig({ METRICS_PORT: '8080', HOST: '10.0.0.5' }).metrics?.port, 8080)
    assert.equal(
      loadConfig({ METRICS_PORT: '8080', HOST: '0.0.0.0', METRICS_HOST: '::1' }).metrics?.port,
      8080,
    )
    assert.equal(loadConfig({ PORT: '0', METRICS_PORT: '0' }).metrics?.port, 0)
    assert.equal(loadConfig({ METRICS_PORT: '8080', METRICS: 'off' }).metrics, undefined)
  })

  test('when several workers would each hold their own in-memory store, then the start stops', () => {
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'sqlite::memory:', WORKERS: '2' }),
      (error: Error) =>
        error instanceof ConfigError &&
        error.message ===
          'WORKERS must be 1 with DATABASE_URL=sqlite::memory: (each worker would serve a store of its own; got 2)',
    )
    assert.equal(loadConfig({ DATABASE_URL: 'sqlite::memory:', WORKERS: '1' }).workers, 1)
    if (availableParallelism() > 1) {
      assert.throws(
        () => loadConfig({ DATABASE_URL: 'sqlite::memory:', WORKERS: 'auto' }),
        (error: Error) => error.message.endsWith(`got auto, ${availableParallelism()} here)`),
      )
    }
  })
})
