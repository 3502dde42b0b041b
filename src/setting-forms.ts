/**
 * The forms a setting's value may take, beyond its type: URLs, lists, key pairs. Each check comes with
 * its form in words, for the error a bad value gets and for the README's table (config-schema.ts).
 */
import { isIP } from 'node:net'
import Type from 'typebox'
import {
  API_KEY_BODY,
  API_KEY_PREFIX,
  isWellFormedApiKey,
  KEY_NAME_PATTERN,
  KEY_NAME_RULE,
} from './schemas/api-key.ts'

// Each pattern comes with its `allowedForm`, the same rule in words, for error messages and the README.
const BASE_URL_FORM = 'an http:// or https:// URL ending in /v1, without credentials, query or fragment'

/**
 * A base URL setting (`PUBLIC_BASE_URL`…): one that parses, too (a port out of range would fail the start as a
 * bare "Invalid URL"), with no user or password, which `Location` and the OpenAPI `servers` would publish.
 */
export function baseUrlSetting(description: string) {
  return Type.Refine(
    Type.String({
      pattern: '^https?://[^\\s/?#@]+(/[^\\s?#]*)?/v1$',
      allowedForm: BASE_URL_FORM,
      description,
    }),
    (value) => URL.canParse(value),
    () => `must be ${BASE_URL_FORM}`,
  )
}
const HOST_FORM = 'an IP address (IPv6 without brackets) or a host name'
// Labels of letters, digits, `-` and `_` (a compose service's name), a final dot allowed: what the
// resolver may find. Whether it does is asked before the store opens (cli/listener-failure.ts).
const HOST_NAME = /^(?=.{1,254}$)(?:\w(?:[\w-]{0,61}\w)?\.)*\w(?:[\w-]{0,61}\w)?\.?$/

/** A listener's host (`HOST`, `METRICS_HOST`): checked with the other settings, not first at listen. */
export function hostSetting(defaultHost: string, description: string) {
  return Type.Refine(
    Type.String({ default: defaultHost, allowedForm: HOST_FORM, description }),
    (value) => isIP(value) !== 0 || HOST_NAME.test(value),
    () => `must be ${HOST_FORM}`,
  )
}

// Values that may hold credentials: never echoed back in an error; warned of in a .env others can read.
export const SECRET_SETTINGS: ReadonlySet<string> = new Set(['API_KEYS', 'DATABASE_URL', 'REDIS_URL'])

export const API_KEYS_FORM = `name:key pairs separated by commas (spaces around them ignored), each name ${KEY_NAME_RULE}, each key ${API_KEY_PREFIX} followed by ${API_KEY_BODY.length} base64url characters; no name or key given twice`

// A URL that parses, too: a bad host or a port out of range would otherwise fail at connect, as "Invalid URL".
// Not a `file:` URI: SQLite would read its options (`mode=ro`, `nolock=1`) and make the file as the umask
// says, and the service checks, backs up and restores the database by its path (docs/decisions.md).
export const DATABASE_URL_FORM =
  'sqlite: followed by a file path (not a file: URI; ./file:… for a file so named; sqlite::memory: for a throwaway store), or a valid postgres:// or postgresql:// URL'
export const REDIS_URL_FORM = 'a valid redis:// or rediss:// URL'

/**
 * Why REDIS_URL's database is refused, or undefined: the client reads it (the path, or `db=`) with
 * parseInt, so `/staging` became NaN, whose SELECT failed unhandled at every connect and ended the process.
 */
export function redisDatabaseRefusal(url: string): string | undefined {
  const parsed = new URL(url)
  const named = [
    ...(parsed.pathname.length > 1 ? [parsed.pathname.slice(1)] : []),
    ...parsed.searchParams.getAll('db'),
  ]
  if (named.length <= 1 && named.every((database) => /^\d{1,9}$/.test(database))) return undefined
  return 'must name its database by number, from 0, as its path (redis://host:6379/1) or db=, once'
}

/**
 * Why a value with white space before or after it is refused, naming which and where (never the value,
 * which may hold a password); undefined if it has none.
 */
export function surroundingSpaceRefusal(value: string): string | undefined {
  const start = /^\s/.exec(value)?.[0]
  const end = /\s$/.exec(value)?.[0]
  if (start === undefined && end === undefined) return undefined
  const got =
    start === undefined ? `${JSON.stringify(end)} at its end` : `${JSON.stringify(start)} at its start`
  return `must not begin or end with white space (got ${got})`
}

/**
 * Whether `url` is one the PostgreSQL client reads: a URL, or one naming no host before a Unix socket's
 * `?host=/run/postgresql` (`postgres://user@/db`), which the client reads with a stand-in host.
 */
export function isPostgresUrl(url: string): boolean {
  return postgresUrlOf(url) !== undefined
}

/**
 * `url` parsed as the PostgreSQL client reads it, with `socket` the Unix socket's directory when it names
 * no host (`?host=…`); undefined if it is no URL. Every reader of a DATABASE_URL parses it here: `new URL`
 * alone throws on `postgres://user@/db`.
 */
export function postgresUrlOf(url: string): { url: URL; socket: string | undefined } | undefined {
  const direct = URL.canParse(url)
  if (!direct && !URL.canParse(url.replace('@/', '@h/'))) return undefined
  const parsed = new URL(direct ? url : url.replace('@/', '@h/'))
  const socket = !direct || parsed.host === '' ? (parsed.searchParams.get('host') ?? '') : undefined
  return { url: parsed, socket }
}

// The sslmode values the PostgreSQL client reads. Any other (libpq's `allow` too) it takes as TLS with the
// certificate checked: a mistyped one (`verify_full`) is said at start, not guessed at.
const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify']

/**
 * Why a PostgreSQL URL's `sslmode` is refused, if it is: its value, cut short, never the rest of the URL.
 * Every one given is checked (the client takes the last).
 */
export function sslmodeRefusal(url: string): string | undefined {
  const modes = postgresUrlOf(url)?.url.searchParams.getAll('sslmode') ?? []
  const unknown = modes.find((mode) => !SSL_MODES.includes(mode))
  if (unknown === undefined) return undefined
  return `has sslmode ${JSON.stringify(unknown.slice(0, 40))}, which is none of ${SSL_MODES.join(', ')}`
}

/** What a store's URL names (DATABASE_URL, copy's --from and --to), or why it names none: one clause. */
export type StoreLocation = { engine: 'sqlite'; path: string } | { engine: 'postgres' } | { refusal: string }

/**
 * The one reading of a store's URL: `sqlite:PATH` (`sqlite::memory:` included) or a `postgres://` URL the
 * client reads with a known sslmode. A refusal never echoes the URL, which may hold a password.
 */
export function storeLocationOf(url: string): StoreLocation {
  // SQLite would read a `file:` URI's options, and make the file itself.
  if (url.startsWith('sqlite:file:'))
    return {
      refusal: 'names a SQLite file by a file: URI: name it by its path (./file:… for a file so named)',
    }
  if (url === 'sqlite:') return { refusal: 'sqlite: names no file: sqlite:PATH' }
  if (url.startsWith('sqlite:')) return { engine: 'sqlite', path: url.slice('sqlite:'.length) }
  if (/^postgres(ql)?:\/\//.test(url)) {
    if (!isPostgresUrl(url)) return { refusal: 'is not a valid postgres:// URL (its host or port?)' }
    const refusal = sslmodeRefusal(url)
    return refusal === undefined ? { engine: 'postgres' } : { refusal }
  }
  return { refusal: 'is neither sqlite:PATH nor postgres://user@host:5432/db (password in PGPASSWORD)' }
}

export const CORS_ORIGINS_FORM =
  "origins (https://app.example.com, http://localhost:3000: a scheme, a host, a port if not the scheme's own, no path), separated by commas"

/**
 * An origin exactly as a browser sends it in `Origin`, which is compared as text: a wildcard or `null`
 * would let any page (a sandboxed one, a local file) call with a key, and a trailing slash never matches.
 */
export function isOrigin(entry: string): boolean {
  if (!URL.canParse(entry)) return false
  const { protocol, origin } = new URL(entry)
  return (protocol === 'https:' || protocol === 'http:') && origin === entry
}

export const TRUSTED_PROXIES_FORM =
  'IP addresses, CIDR ranges (10.0.0.0/8, fd00::/8) or the names loopback, linklocal, uniquelocal, separated by commas'
// The named ranges Fastify's trustProxy (proxy-addr) knows.
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal'])

export function isTrustedProxy(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true
  const [address = '', prefix, ...rest] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || rest.length > 0) return false
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128))
}

/**
 * The entries of a comma-separated list setting (`TRUSTED_PROXIES`, `CORS_ORIGINS`, `API_KEYS`), spaces and
 * empty entries dropped: what Fastify's `trustProxy` and the CORS check take (the schema has checked each).
 */
export function entriesOf(setting: string): string[] {
  return setting
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
}

/** A comma-separated list setting, empty by default, each of whose entries must pass `isEntry`. */
export function listSetting(form: string, description: string, isEntry: (entry: string) => boolean) {
  return Type.Refine(
    Type.String({ default: '', allowedForm: form, description }),
    (value) => entriesOf(value).every(isEntry),
    () => `must be ${form}`,
  )
}

/**
 * What `API_KEYS` repeats, in words (the names only, never a key), or undefined. A name given twice would
 * store the first key and then refuse the start; a key given twice would be stored under its first name.
 */
export function repeatedInApiKeys(value: string): string | undefined {
  const nameOfKey = new Map<string, string>()
  const names = new Set<string>()
  for (const entry of entriesOf(value)) {
    const [name = '', key = ''] = entry.split(':')
    if (names.has(name)) return `must give each name once: "${name}" is given twice`
    const first = nameOfKey.get(key)
    if (first !== undefined) return `must give each key once: "${first}" and "${name}" give the same key`
    names.add(name)
    nameOfKey.set(key, name)
  }
  return undefined
}

export function isApiKeyList(value: string): boolean {
  return entriesOf(value).every((entry) => {
    const [name, key, ...rest] = entry.split(':')
    return rest.length === 0 && KEY_NAME_PATTERN.test(name ?? '') && isWellFormedApiKey(key ?? '')
  })
}

const QUOTES = new Set(['"', "'", '`'])

/**
 * The numbers of the lines of a `.env` text that Node's `parseEnv` drops without a word: not blank, not a
 * comment, with no `=` (a space or a colon typed for it), and not inside a quoted value that runs over
 * lines (one whose closing quote comes on a later line; an unclosed one ends with its line, as there).
 */
export function linesSettingNothing(text: string): number[] {
  const lines = text.split(/\r?\n/)
  const found: number[] = []
  for (let index = 0; index < lines.length; index++) {
    const line = (lines[index] as string).trim()
    if (line === '' || line.startsWith('#')) continue
    const equals = line.indexOf('=')
    if (equals === -1) {
      found.push(index + 1)
      continue
    }
    const value = line.slice(equals + 1).trim()
    const quote = value[0] ?? ''
    if (!QUOTES.has(quote) || value.indexOf(quote, 1) !== -1) continue
    const closing = lines.findIndex((later, at) => at > index && later.includes(quote))
    if (closing !== -1) index = closing
  }
  return found
}
