import Type, { type Static } from 'typebox'
import { GET_PET_SUNSET_DAY } from './pets/get-pet-deprecation.ts'
import {
  API_KEYS_FORM,
  baseUrlSetting,
  CORS_ORIGINS_FORM,
  DATABASE_URL_FORM,
  hostSetting,
  isApiKeyList,
  isOrigin,
  isPostgresUrl,
  isTrustedProxy,
  listSetting,
  REDIS_URL_FORM,
  redisDatabaseRefusal,
  repeatedInApiKeys,
  sslmodeRefusal,
  storeLocationOf,
  TRUSTED_PROXIES_FORM,
} from './setting-forms.ts'

/** The embedded store a first start creates, in `data/` (the one directory a start creates). */
export const DEFAULT_DATABASE_URL = 'sqlite:data/petstore.db'
const DURATION = (fallback: number, description: string, minimum = 0) =>
  Type.Integer({ minimum, maximum: 3_600_000, default: fallback, description })

/**
 * Every setting, by the name of its environment variable: this schema validates the environment (config.ts
 * then decodes it) and is the source of the README's configuration table (`npm run readme:tables`).
 */
export const ConfigSchema = Type.Object({
  HOST: hostSetting('127.0.0.1', 'Interface to listen on; `0.0.0.0` in containers.'),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080, description: 'TCP port of the API.' }),
  DATABASE_URL: Type.Refine(
    Type.String({
      default: DEFAULT_DATABASE_URL,
      pattern: '^(sqlite:(?!file:).+|postgres(ql)?://.+)$',
      allowedForm: DATABASE_URL_FORM,
      description:
        'Where pets and keys live: `sqlite:<file path>` (embedded; `sqlite::memory:` for a throwaway store) or `postgres://user:password@host:5432/db` (many instances).',
    }),
    (value) => !('refusal' in storeLocationOf(value)),
    (value) => (isPostgresUrl(value) && sslmodeRefusal(value)) || `must be ${DATABASE_URL_FORM}`,
  ),
  PG_POOL_SIZE: Type.Integer({
    minimum: 1,
    maximum: 1000,
    default: 10,
    description:
      "PostgreSQL: connections per process (each WORKERS worker has its own pool); instances × workers × this must stay under the server's max_connections.",
  }),
  PG_STATEMENT_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 5000,
    description:
      'PostgreSQL: longest a statement may run (server-side); the client gives up 1 s later (503) and destroys the connection.',
  }),
  PG_CONNECT_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 2000,
    description:
      'PostgreSQL: longest wait for a connection (503 after it). Every call to the database, a create with the batch it queues behind included, is answered within this + PG_STATEMENT_TIMEOUT_MS + 1 s.',
  }),
  PUBLIC_BASE_URL: Type.Optional(
    baseUrlSetting(
      'Base URL clients use for this deployment, ending in `/v1`; used in `Location` headers and listed first in the OpenAPI `servers`. Default `/v1`: relative, resolved against the address each client used.',
    ),
  ),
  PRODUCTION_BASE_URL: Type.Optional(
    baseUrlSetting(
      "Production's base URL, listed in the OpenAPI `servers` (and reachable from the docs page) when set; unset, not listed.",
    ),
  ),
  STAGING_BASE_URL: Type.Optional(
    baseUrlSetting(
      "Staging's base URL, listed in the OpenAPI `servers` (and reachable from the docs page) when set; unset, not listed.",
    ),
  ),
  LOG_FORMAT: Type.Enum(['auto', 'json', 'pretty'], {
    type: 'string',
    default: 'auto',
    description: 'Log lines as JSON, or human-readable; `auto` is pretty on a terminal and JSON otherwise.',
  }),
  LOG_LEVEL: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    type: 'string',
    default: 'info',
    description: 'Least severe log level written.',
  }),
  API_KEYS: Type.Refine(
    Type.String({
      default: '',
      allowedForm: API_KEYS_FORM,
      description:
        'Keys given to this deployment, `name:key` pairs separated by commas. Stored hashed at start (never revived once revoked).',
    }),
    (value) => isApiKeyList(value) && repeatedInApiKeys(value) === undefined,
    (value) => (isApiKeyList(value) && repeatedInApiKeys(value)) || `must be ${API_KEYS_FORM}`,
  ),
  API_KEY_CACHE_TTL_MS: DURATION(
    5000,
    'How long a key lookup is reused; a revoked key is refused within this.',
  ),
  BODY_LIMIT_BYTES: Type.Integer({
    minimum: 256,
    maximum: 1_048_576,
    default: 4096,
    description: 'Largest request body accepted; larger bodies get 413.',
  }),
  READ_CACHE_BYTES: Type.Integer({
    minimum: 0,
    maximum: 1e10,
    default: 32 * 1024 * 1024,
    description: 'Memory for serialized answers that never change (pets, full list pages); 0 keeps none.',
  }),
  IDEMPOTENCY_RETENTION_S: Type.Integer({
    minimum: 60,
    maximum: 2_592_000,
    default: 86_400,
    description: 'How long an Idempotency-Key is remembered (and a retry replays the first result).',
  }),
  GET_PET_AFTER_SUNSET: Type.Enum(['serve', 'gone'], {
    type: 'string',
    default: 'serve',
    description: `What getPet does after its sunset (${GET_PET_SUNSET_DAY}): keep serving, or answer 410 Gone.`,
  }),
  RATE_LIMIT_PER_MINUTE: Type.Integer({
    minimum: 0,
    maximum: 10_000_000,
    default: 6000,
    description: 'Requests per minute allowed to one API key (429 beyond); 0 switches rate limiting off.',
  }),
  REDIS_URL: Type.Optional(
    Type.Refine(
      Type.String({
        pattern: '^rediss?://.+$',
        allowedForm: REDIS_URL_FORM,
        description:
          'Redis for rate limits shared by all instances and workers; without it each process counts alone.',
      }),
      (value) => URL.canParse(value) && redisDatabaseRefusal(value) === undefined,
      (value) => (URL.canParse(value) && redisDatabaseRefusal(value)) || `must be ${REDIS_URL_FORM}`,
    ),
  ),
  METRICS: Type.Enum(['on', 'off'], {
    type: 'string',
    default: 'on',
    description: 'Serve Prometheus metrics on their own listener (METRICS_HOST:METRICS_PORT, path /metrics).',
  }),
  METRICS_HOST: hostSetting(
    '127.0.0.1',
    'Interface of the metrics listener; loopback so metrics are never exposed with the API.',
  ),
  METRICS_PORT: Type.Integer({
    minimum: 0,
    maximum: 65535,
    default: 9464,
    description: 'Port of the metrics listener.',
  }),
  MAX_CONNECTIONS: Type.Integer({
    minimum: 1,
    maximum: 1_000_000,
    default: 10_000,
    description: 'Open connections accepted at once per process; more are refused by the socket.',
  }),
  MAX_EVENT_LOOP_DELAY_MS: Type.Integer({
    minimum: 0,
    maximum: 60_000,
    default: 1000,
    description: 'Above this event-loop delay requests are shed with 503 and Retry-After; 0 switches it off.',
  }),
  MAX_HEAP_USED_BYTES: Type.Integer({
    minimum: 0,
    maximum: 1e12,
    default: 0,
    description: 'Above this heap use requests are shed with 503; 0 switches it off.',
  }),
  DOCS: Type.Enum(['on', 'off'], {
    default: 'on',
    description:
      'Serve the interactive API reference at /docs (assets served locally, no key needed to read it).',
  }),
  TRUSTED_PROXIES: listSetting(
    TRUSTED_PROXIES_FORM,
    'Load balancers and proxies whose `X-Forwarded-For` is believed: the request log then shows the client they name. Empty: the socket address is the client, and the header is ignored.',
    isTrustedProxy,
  ),
  CORS_ORIGINS: listSetting(
    CORS_ORIGINS_FORM,
    'Browser origins allowed to call the API (comma-separated, e.g. `https://app.example.com`); empty: CORS off.',
    isOrigin,
  ),
  WORKERS: Type.String({
    default: '1',
    pattern: '^(auto|[1-9][0-9]{0,2})$',
    allowedForm: 'auto, or a whole number from 1 to 999',
    description: 'Processes serving the API: a number, or `auto` for one per available CPU.',
  }),
  WORKER_LIVENESS_TIMEOUT_MS: Type.Integer({
    minimum: 1000,
    maximum: 600_000,
    default: 10_000,
    description:
      'With WORKERS above 1: a worker that has not answered its supervisor for this long (its event loop stuck, or the process stopped) is killed and replaced.',
  }),
  REQUEST_TIMEOUT_MS: DURATION(
    10_000,
    'Time allowed to receive a whole request (408 after it); 0: no limit, which lets slow clients hold connections.',
  ),
  HEADERS_TIMEOUT_MS: DURATION(
    5000,
    'Time allowed to receive the request headers; 0: no limit, which lets slow clients hold connections.',
  ),
  SEND_TIMEOUT_MS: DURATION(
    10_000,
    'Time an answer may wait with none of its bytes taken (a client that stopped reading) before its connection is closed; 0: no limit, which lets such clients hold connections.',
  ),
  // At least 1: Fastify would take 0 for its own default, 72 s.
  KEEP_ALIVE_TIMEOUT_MS: DURATION(
    5000,
    'Idle time before a kept-alive connection is closed; announced in whole seconds (`Keep-Alive: timeout=5`), so under 1000 as `timeout=0`.',
    1,
  ),
  SHUTDOWN_TIMEOUT_MS: DURATION(
    10_000,
    'On SIGTERM/SIGINT/SIGHUP, time allowed for in-flight requests before exit; 0: none, connections are cut at once.',
  ),
  SHUTDOWN_DELAY_MS: Type.Integer({
    minimum: 0,
    maximum: 60_000,
    default: 0,
    description:
      'On SIGTERM/SIGINT/SIGHUP, time spent serving on with /readyz answering 503 before the listener closes, for a balancer to take the instance out; add it to every stop timeout.',
  }),
  WRITE_BATCH_MAX: Type.Integer({
    minimum: 1,
    maximum: 1000,
    default: 500,
    description:
      'Most creates committed together in one transaction and one disk sync (group commit); 1 commits each alone.',
  }),
  SQLITE_WRITE_THREAD: Type.Enum(['on', 'off'], {
    default: 'off',
    description:
      'Commit SQLite writes on a thread of their own, so reads are served while the disk syncs; pays off with a spare core, costs memory (docs/decisions.md).',
  }),
  SQLITE_BUSY_TIMEOUT_MS: DURATION(
    5000,
    'How long a write waits for another process holding the SQLite lock, counted from its arrival (time queued behind other writes included).',
  ),
})

/** The environment's settings once validated, before config.ts decodes them. */
export type Settings = Static<typeof ConfigSchema>

/** Every setting's name. */
export const SETTING_NAMES: ReadonlySet<string> = new Set(Object.keys(ConfigSchema.properties))
