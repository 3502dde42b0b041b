import { closeSync, constants, existsSync, openSync, readSync, type Stats, statSync } from 'node:fs'
import { parseEnv } from 'node:util'
import { SETTING_NAMES } from './config-schema.ts'
import { ConfigError } from './errors.ts'
import { kindOfFile, modeInOctal, ownerRefusal } from './file-kind.ts'
import { linesSettingNothing, postgresUrlOf, SECRET_SETTINGS } from './setting-forms.ts'

/** What the settings file gives: the environment it makes, and what is wrong with it (`fileWarnings`). */
export interface EnvironmentRead {
  environment: Record<string, string | undefined>
  warnings: string[]
}

/**
 * `environment` (the process's, handed in by cli/) with the settings file at `path` underneath it, and
 * what is wrong with that file, both from one read of it: a file edited or removed between two reads
 * would give settings the warnings do not speak of.
 */
export function readEnvironment(
  path: string,
  environment: Record<string, string | undefined>,
): EnvironmentRead {
  const file = environmentFile(path)
  if (file === undefined) return { environment: { ...environment }, warnings: [] }
  const fromFile = parseEnv(file.text)
  return { environment: { ...fromFile, ...environment }, warnings: fileWarnings(file, fromFile) }
}

// A settings file is a few KB: one far larger is something else (a log, a dump), and is not read whole.
const MAX_SETTINGS_BYTES = 1024 * 1024

/**
 * The text of `.env` and its mode, or undefined when there is none. A byte order mark (UTF-8 as editors
 * on Windows save it) would be read as part of the first name.
 */
function environmentFile(path: string): { text: string; mode: number } | undefined {
  if (!existsSync(path)) return undefined
  // Told before it is opened (through a link, of what it names): a FIFO's read waited for a writer for ever,
  // and /dev/zero's grew without bound.
  const stats = statSync(path)
  // Read, a directory fails as a bare EISDIR naming no file.
  if (stats.isDirectory()) {
    throw new ConfigError(
      `${path} is a directory, not a settings file (remove it; a bind mount of a missing file makes one)`,
    )
  }
  const kind = kindOfFile(stats)
  if (kind !== undefined) {
    throw new ConfigError(
      `${path} is ${kind}, not a settings file: it must be a regular file (or a symbolic link to one)`,
    )
  }
  if (stats.size > MAX_SETTINGS_BYTES) throw tooLarge(path, `${stats.size} bytes`)
  // Neither waits nor reads on should another file take its place since the stat: opened without blocking,
  // read to one byte past the limit.
  const fd = openUnblocked(path, stats)
  try {
    const bytes = Buffer.allocUnsafe(MAX_SETTINGS_BYTES + 1)
    let length = 0
    let read: number
    do {
      read = readSync(fd, bytes, length, bytes.length - length, null)
      length += read
    } while (read > 0 && length < bytes.length)
    if (length > MAX_SETTINGS_BYTES) throw tooLarge(path, `over ${MAX_SETTINGS_BYTES} bytes`)
    return { text: bytes.toString('utf8', 0, length).replace(/^\uFEFF/, ''), mode: stats.mode }
  } finally {
    closeSync(fd)
  }
}

/** `path` opened to read; one this user may not read is refused naming its owner, or its mode if its own. */
function openUnblocked(path: string, stats: Stats): number {
  try {
    return openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EACCES') throw error
    const rather = 'run the command as the user the service runs as, or chown it to that user'
    throw new ConfigError(ownerRefusal(path, stats, 'read', rather))
  }
}

function tooLarge(path: string, size: string): ConfigError {
  return new ConfigError(
    `${path} is ${size}, not a settings file: it may be at most 1 MiB (a settings file is a few KB)`,
  )
}

/** Whether `value` of setting `name` is a secret: keys, a URL with a password, or PostgreSQL's password. */
function holdsSecret(name: string, value: string): boolean {
  if (name === 'API_KEYS') return value !== ''
  // No setting (libpq reads it only from the environment), yet a password all the same.
  if (name === 'PGPASSWORD') return value !== ''
  if (!SECRET_SETTINGS.has(name)) return false
  // A socket URL (`postgres://user:pw@/db?host=…`) is no WHATWG URL: read as the client reads it.
  const url = URL.canParse(value) ? new URL(value) : postgresUrlOf(value)?.url
  return url !== undefined && (url.password !== '' || url.searchParams.has('password'))
}

/**
 * What is wrong with `.env` without stopping the start, said at warn once the log exists: a name that is
 * no setting (a typo, or a variable Node or libpq read only from the environment, which this file never
 * reaches), a line that sets nothing, and secrets in a file other users can read. Never a value.
 */
function fileWarnings(
  { text, mode }: { text: string; mode: number },
  fromFile: Record<string, string | undefined>,
): string[] {
  const warnings = Object.keys(fromFile)
    .filter((name) => !SETTING_NAMES.has(name))
    .map((name) => {
      const meant = settingMeant(name)
      return meant !== undefined
        ? `.env sets ${name}, which is no setting of this service: did you mean ${meant}? (it has no effect)`
        : `.env sets ${name}, which is no setting of this service: it has no effect (a variable Node.js or PostgreSQL's client reads, such as NODE_EXTRA_CA_CERTS or PGPASSWORD, belongs in the environment; settings: .env.example)`
    })
  // Never the line's text: it may hold a key.
  for (const line of linesSettingNothing(text)) warnings.push(`.env line ${line} has no "=": it sets nothing`)
  const secrets = Object.entries(fromFile)
    .filter(([name, value]) => holdsSecret(name, value ?? ''))
    .map(([name]) => name)
  if (secrets.length > 0 && (mode & 0o044) !== 0) {
    warnings.push(
      `.env holds ${secrets.join(', ')}, and other users can read it (mode ${modeInOctal(mode)}): chmod 600 .env`,
    )
  }
  return warnings
}

/** The setting `name` is a slip of, if one is nearest: its case, or at most two letters off (a swap, one). */
function settingMeant(name: string): string | undefined {
  const upper = name.toUpperCase()
  const distances = [...SETTING_NAMES].map((setting) => ({ setting, slips: slipsBetween(upper, setting) }))
  const least = Math.min(...distances.map(({ slips }) => slips))
  const nearest = distances.filter(({ slips }) => slips === least)
  return least <= 2 && nearest.length === 1 ? nearest[0]?.setting : undefined
}

/** The optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function slipsBetween(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  )
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      const row = d[i] as number[]
      const above = d[i - 1] as number[]
      row[j] = Math.min((above[j] as number) + 1, (row[j - 1] as number) + 1, (above[j - 1] as number) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1)
      }
    }
  }
  return (d[a.length] as number[])[b.length] as number
}
