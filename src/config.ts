import { isIP } from 'node:net'
import { availableParallelism } from 'node:os'
import { dirname } from 'node:path'
import { Errors } from 'typebox/schema'
import type { HttpSettings } from './app.ts'
import { ConfigSchema, DEFAULT_DATABASE_URL, type Settings } from './config-schema.ts'
import { ConfigError } from './errors.ts'
import type { LogSettings } from './log/logger.ts'
import type { MetricsListener } from './metrics/metrics-server.ts'
import type { BaseUrls } from './routes/openapi/openapi.ts'
import type { V1ApiSettings } from './routes/v1-api.ts'
import { brokenRule, type SchemaNode } from './schemas/schema-rules.ts'
import { decodeString } from './schemas/string-decoding.ts'
import type { ListenSettings } from './server.ts'
import { entriesOf, SECRET_SETTINGS, storeLocationOf, surroundingSpaceRefusal } from './setting-forms.ts'

/** Where pets and keys live: the engine `DATABASE_URL` names, with that engine's settings. */
export type DatabaseSettings =
  | {
      engine: 'sqlite'
      /** A file path, or `:memory:`. */
      path: string
      /** The directory of the file (none for `:memory:`): the initial key is written there. */
      dataDirectory: string | undefined
      /** Only the default directory is created; any other must exist. */
      createsDataDirectory: boolean
      busyTimeoutMs: number
      writeThread: boolean
      maxBatch: number
    }
  | {
      engine: 'postgres'
      url: string
      poolSize: number
      statementTimeoutMs: number
      connectTimeoutMs: number
      maxBatch: number
    }

/**
 * The settings, decoded once: lists, numbers, milliseconds, the engine and its options. Grouped by the part
 * of the service that takes them, so the composition root (cli/) hands each part only its own group.
 */
export interface Config {
  server: ListenSettings
  http: HttpSettings
  baseUrls: BaseUrls
  api: V1ApiSettings
  /** Requests per minute and API key (0: off); with `redisUrl`, counted by all instances together. */
  rateLimit: { perMinute: number; redisUrl: string | undefined }
  database: DatabaseSettings
  /** Keys given to this deployment (`API_KEYS`), stored hashed at start. */
  apiKeys: ReadonlyArray<{ name: string; key: string }>
  log: LogSettings
  /** The metrics listener; undefined when `METRICS=off`. */
  metrics: MetricsListener | undefined
  /** Processes serving the API, `auto` resolved to the CPUs available. */
  workers: number
  /** With `workers` above 1: how long a worker may leave its supervisor unanswered before it is replaced. */
  workerLivenessTimeoutMs: number
  docs: boolean
}

const properties = ConfigSchema.properties as unknown as Record<string, SchemaNode & { default?: unknown }>

/**
 * Every setting as this process read it, `''` for one not set: the environment of a process it starts (a
 * WORKERS worker, which reads no `.env`), so a replacement started after the file was edited runs on the
 * settings its siblings run on.
 */
export function settingsEnvironment(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.keys(properties).map((name) => [name, env[name] ?? '']))
}

/**
 * Whether `value` of setting `name` may hold a secret, so that no error echoes it: a setting that holds
 * secrets, or a URL with a user.
 */
function mayHoldSecret(name: string, value: string): boolean {
  return SECRET_SETTINGS.has(name) || /^[a-z]+:\/\/[^/?#]*@/i.test(value)
}

/** Validates settings given as strings, then decodes them; throws a ConfigError naming the first bad one. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  // A space kept from quoting, read into a sqlite: path, opened another, empty database. Refused as PORT,
  // HOST and the other single values refuse one, and named here: the value (a password) is never echoed.
  for (const name of ['DATABASE_URL', 'REDIS_URL']) {
    const spaced = surroundingSpaceRefusal(env[name] ?? '')
    if (spaced !== undefined) throw new ConfigError(`${name} ${spaced}`)
  }
  const values: Record<string, unknown> = {}
  for (const [name, schema] of Object.entries(properties)) {
    const raw = env[name]
    if (raw === undefined || raw === '') {
      if (schema.default !== undefined) values[name] = schema.default
      continue
    }
    values[name] = decodeString(schema, raw)
  }
  const [, [error]] = Errors(ConfigSchema, values)
  if (error !== undefined) {
    const name = error.instancePath.split('/')[1] ?? ''
    const rule = brokenRule(error, properties[name])
    const got = mayHoldSecret(name, env[name] ?? '') ? '' : ` (got ${JSON.stringify(env[name])})`
    throw new ConfigError(`${name} ${rule}${got}`)
  }
  const settings = values as Settings
  // The whole-request timeout includes the headers, so a longer headers timeout could never apply.
  if (settings.REQUEST_TIMEOUT_MS > 0 && settings.HEADERS_TIMEOUT_MS > settings.REQUEST_TIMEOUT_MS) {
    throw new ConfigError(
      `HEADERS_TIMEOUT_MS must be at most REQUEST_TIMEOUT_MS (got ${settings.HEADERS_TIMEOUT_MS} and ${settings.REQUEST_TIMEOUT_MS})`,
    )
  }
  const config = decode(settings)
  refuseConflicts(config, settings.WORKERS)
  return config
}

/** Settings valid alone that cannot run together: the start stops, rather than a listener or worker later. */
function refuseConflicts({ server, metrics, database, workers }: Config, workersSetting: string): void {
  if (metrics && metrics.port !== 0 && metrics.port === server.port && mayShare(server.host, metrics.host)) {
    throw new ConfigError(
      `METRICS_PORT must differ from PORT when both listen on the same address (got ${server.port} for both; METRICS=off switches the listener off)`,
    )
  }
  if (database.engine === 'sqlite' && database.path === ':memory:' && workers > 1) {
    const got = workersSetting === 'auto' ? `auto, ${workers} here` : String(workers)
    throw new ConfigError(
      `WORKERS must be 1 with DATABASE_URL=sqlite::memory: (each worker would serve a store of its own; got ${got})`,
    )
  }
}

/**
 * Whether listeners on hosts `a` and `b` may take the same address: the same address however written
 * (`::ffff:127.0.0.1` is 127.0.0.1), `::` (every address, IPv4 too) with any, `0.0.0.0` with any IPv4
 * one. A host name may resolve to anything: it is taken to share.
 */
function mayShare(a: string, b: string): boolean {
  const [x, y] = [listenAddress(a), listenAddress(b)]
  if (x === undefined || y === undefined) return true
  if (x === y || x === '::' || y === '::') return true
  const ipv4 = (address: string) => isIP(address) === 4
  return (x === '0.0.0.0' && ipv4(y)) || (y === '0.0.0.0' && ipv4(x))
}

/** An IP address in one spelling (IPv4-mapped IPv6 as IPv4, IPv6 compressed), or undefined for a name. */
function listenAddress(host: string): string | undefined {
  if (isIP(host) === 4) return host
  if (isIP(host) !== 6) return undefined
  const address = new URL(`http://[${host}]`).hostname.slice(1, -1)
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(address)
  if (mapped === null) return address
  const [high, low] = [Number.parseInt(mapped[1] ?? '', 16), Number.parseInt(mapped[2] ?? '', 16)]
  return [high >> 8, high & 255, low >> 8, low & 255].join('.')
}

function decode(s: Settings): Config {
  return deepFreeze({
    server: {
      host: s.HOST,
      port: s.PORT,
      shutdownTimeoutMs: s.SHUTDOWN_TIMEOUT_MS,
      shutdownDelayMs: s.SHUTDOWN_DELAY_MS,
    },
    http: {
      bodyLimitBytes: s.BODY_LIMIT_BYTES,
      requestTimeoutMs: s.REQUEST_TIMEOUT_MS,
      headersTimeoutMs: s.HEADERS_TIMEOUT_MS,
      keepAliveTimeoutMs: s.KEEP_ALIVE_TIMEOUT_MS,
      sendTimeoutMs: s.SEND_TIMEOUT_MS,
      maxConnections: s.MAX_CONNECTIONS,
      corsOrigins: entriesOf(s.CORS_ORIGINS),
      trustedProxies: entriesOf(s.TRUSTED_PROXIES),
    },
    baseUrls: {
      // Unset, the base is the root-relative `/v1`: `Location`, `Link` and the OpenAPI `servers` all allow a
      // URI reference, resolved against the address the client used — right whatever host or port that was.
      publicBaseUrl: s.PUBLIC_BASE_URL ?? '/v1',
      productionBaseUrl: s.PRODUCTION_BASE_URL,
      stagingBaseUrl: s.STAGING_BASE_URL,
    },
    api: {
      apiKeyCacheTtlMs: s.API_KEY_CACHE_TTL_MS,
      readCacheBytes: s.READ_CACHE_BYTES,
      idempotencyRetentionMs: s.IDEMPOTENCY_RETENTION_S * 1000,
      getPetAfterSunset: s.GET_PET_AFTER_SUNSET,
      maxEventLoopDelayMs: s.MAX_EVENT_LOOP_DELAY_MS,
      maxHeapUsedBytes: s.MAX_HEAP_USED_BYTES,
    },
    rateLimit: { perMinute: s.RATE_LIMIT_PER_MINUTE, redisUrl: s.REDIS_URL },
    database: databaseOf(s),
    apiKeys: apiKeysOf(s.API_KEYS),
    log: { level: s.LOG_LEVEL, format: s.LOG_FORMAT },
    metrics: s.METRICS === 'on' ? { host: s.METRICS_HOST, port: s.METRICS_PORT } : undefined,
    workers: s.WORKERS === 'auto' ? availableParallelism() : Number(s.WORKERS),
    workerLivenessTimeoutMs: s.WORKER_LIVENESS_TIMEOUT_MS,
    docs: s.DOCS === 'on',
  })
}

function databaseOf(s: Settings): DatabaseSettings {
  const maxBatch = s.WRITE_BATCH_MAX
  const location = storeLocationOf(s.DATABASE_URL)
  // The schema has refused every URL that names no store.
  if (!('engine' in location) || location.engine !== 'sqlite') {
    return {
      engine: 'postgres',
      url: s.DATABASE_URL,
      poolSize: s.PG_POOL_SIZE,
      statementTimeoutMs: s.PG_STATEMENT_TIMEOUT_MS,
      connectTimeoutMs: s.PG_CONNECT_TIMEOUT_MS,
      maxBatch,
    }
  }
  const { path } = location
  return {
    engine: 'sqlite',
    path,
    dataDirectory: path === ':memory:' ? undefined : dirname(path),
    createsDataDirectory: s.DATABASE_URL === DEFAULT_DATABASE_URL,
    busyTimeoutMs: s.SQLITE_BUSY_TIMEOUT_MS,
    writeThread: s.SQLITE_WRITE_THREAD === 'on',
    maxBatch,
  }
}

/** `API_KEYS` as name/key pairs (the schema has checked their form). */
function apiKeysOf(setting: string): Array<{ name: string; key: string }> {
  return entriesOf(setting).map((entry) => {
    const [name, key] = entry.split(':') as [string, string]
    return { name, key }
  })
}

function deepFreeze<T extends object>(value: T): T {
  for (const child of Object.values(value)) {
    if (child !== null && typeof child === 'object') deepFreeze(child)
  }
  return Object.freeze(value)
}
