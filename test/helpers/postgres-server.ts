import { execFileSync, spawnSync } from 'node:child_process'
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './free-port.ts'
import { databaseFactory } from './postgres-test-databases.ts'
import { childrenOf } from './process-children.ts'
import { type Lack, suiteNeeding } from './suite-requirements.ts'
import type { TestCertificates } from './test-certificates.ts'

/**
 * A throwaway PostgreSQL server for tests: `initdb` and `pg_ctl` on a temporary directory and a free port,
 * from the PostgreSQL binaries on the machine; or, when `PETSTORE_TEST_POSTGRES_URL` names a server, that
 * server. Each test gets its own database, so tests never see each other's rows.
 */
export interface PostgresServer {
  /** A fresh, empty database on this server; its URL. */
  createDatabase(): Promise<string>
  /** Stops the server the way a crash or an operator would (`immediate` skips the shutdown checkpoint). */
  stop(mode?: 'fast' | 'immediate'): void
  start(): void
  /**
   * Freezes every process of the server (SIGSTOP to the postmaster, then its children): connections stay
   * open and the port keeps accepting, but nothing answers, as on a hung host. `thaw` resumes them.
   */
  freeze(): void
  thaw(): void
  /** Whether stop/start are possible (not for a server named by URL). */
  readonly controllable: boolean
  /** The directory of its Unix socket, for a server of the tests' own (undefined for one named by URL). */
  readonly socketDirectory?: string
}

const NO_SERVER_BINARIES = 'no PostgreSQL server binaries (initdb, pg_ctl) on this machine'

/** What keeps PostgreSQL tests from running here, or undefined when they can. */
export function postgresLack(): Lack | undefined {
  if (process.env.PETSTORE_TEST_POSTGRES_URL || binDirectory() !== undefined) return undefined
  return {
    missing: NO_SERVER_BINARIES,
    remedy: 'apt-get install postgresql (or name a server: PETSTORE_TEST_POSTGRES_URL=postgres://… npm test)',
  }
}

/** Why PostgreSQL cannot be used here, in a sentence, or undefined when it can (for the benchmark). */
export function postgresUnavailableReason(): string | undefined {
  const lack = postgresLack()
  return lack && `${lack.missing} (${lack.remedy})`
}

/**
 * `describe` options for suites that stop and start a server of their own (a server named by URL does not
 * do): skipped with one line when no throwaway server can be started here — except under CI, where that
 * must fail the run.
 */
export function throwawayPostgresSuiteOptions(): { skip?: string } {
  return suiteNeeding(
    'the PostgreSQL outage suites',
    binDirectory() === undefined
      ? { missing: NO_SERVER_BINARIES, remedy: 'apt-get install postgresql' }
      : undefined,
  )
}

/** A PostgreSQL client program (pg_dump, pg_restore…) from the server's binaries, or from PATH. */
export function postgresProgram(name: string): string {
  const bin = binDirectory()
  return bin === undefined ? name : join(bin, name)
}

function binDirectory(): string | undefined {
  try {
    const fromConfig = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
    if (existsSync(join(fromConfig, 'initdb'))) return fromConfig
  } catch {
    // pg_config is optional; look where Debian installs the server.
  }
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a))
  for (const version of versions) {
    const bin = join(root, version, 'bin')
    if (existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl'))) return bin
  }
  return undefined
}

// runuser lives in sbin, which is not on every PATH (CI runs with a minimal one).
const RUNUSER = ['/usr/sbin/runuser', '/sbin/runuser'].find((path) => existsSync(path)) ?? 'runuser'

/** PostgreSQL refuses to run as root; as root, its tools run as the `postgres` user. */
function asServerUser(command: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? [RUNUSER, ['-u', 'postgres', '--', command, ...args]] : [command, args]
}

function run(command: string, args: string[]) {
  const [file, argv] = asServerUser(command, args)
  const result = spawnSync(file, argv, { encoding: 'utf8' })
  if (result.status !== 0) {
    throw new Error(`${command} failed: ${result.error?.message ?? (result.stderr || result.stdout)}`)
  }
}

let shared: Promise<PostgresServer> | undefined

/** One server per test process, started on first use and stopped when the process exits. */
export function sharedPostgres(): Promise<PostgresServer> {
  shared ??= startPostgres()
  return shared
}

/** The server named by `PETSTORE_TEST_POSTGRES_URL` if there is one, else a throwaway server. */
export async function startPostgres(): Promise<PostgresServer> {
  const named = process.env.PETSTORE_TEST_POSTGRES_URL
  if (named) {
    return {
      createDatabase: databaseFactory(named, { sweep: true }),
      stop: () => assertNever('a named server cannot be stopped by tests'),
      start: () => assertNever('a named server cannot be started by tests'),
      freeze: () => assertNever('a named server cannot be frozen by tests'),
      thaw: () => assertNever('a named server cannot be thawed by tests'),
      controllable: false,
    }
  }
  return startThrowawayPostgres()
}

/**
 * A server of the caller's own, from the machine's binaries, even when a server is named by URL: for tests
 * that stop and start it. Stopping a stopped server, or starting a running one, does nothing. With `tls`,
 * it also takes TLS connections with that certificate (plain ones too: the client chooses).
 */
export async function startThrowawayPostgres({
  tls,
}: {
  tls?: TestCertificates
} = {}): Promise<PostgresServer> {
  const bin = binDirectory()
  if (bin === undefined) throw new Error(NO_SERVER_BINARIES)
  const directory = mkdtempSync(join(tmpdir(), 'petstore-pg-'))
  const data = join(directory, 'data')
  if (process.getuid?.() === 0) chownSync(directory, ...postgresOwner())
  run(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'postgres',
    '-A',
    'trust',
    '--no-sync',
    '-E',
    'UTF8',
    '--locale=C',
  ])
  // Chosen after initdb's second or more, so that no other listener is given it in between.
  const port = await freePort()
  // fsync stays on: the outage tests check that acknowledged writes survive an immediate stop.
  let options = `-c listen_addresses=127.0.0.1 -p ${port} -c unix_socket_directories='${directory}' -c max_connections=200`
  if (tls !== undefined) {
    // The server reads its key only if no one else can: owned by its user, mode 0600.
    for (const [from, name] of [
      [tls.cert, 'server.pem'],
      [tls.key, 'server.key'],
    ] as const) {
      copyFileSync(from, join(directory, name))
      chmodSync(join(directory, name), 0o600)
      if (process.getuid?.() === 0) chownSync(join(directory, name), ...postgresOwner())
    }
    options += ` -c ssl=on -c ssl_cert_file='${join(directory, 'server.pem')}' -c ssl_key_file='${join(directory, 'server.key')}'`
  }
  const start = () =>
    run(join(bin, 'pg_ctl'), ['-D', data, '-o', options, '-w', '-l', join(directory, 'log'), 'start'])
  const stop = (mode: 'fast' | 'immediate' = 'fast') =>
    run(join(bin, 'pg_ctl'), ['-D', data, '-m', mode, '-w', 'stop'])
  start()
  let running = true
  let frozen = false
  const signalAll = (signal: 'SIGSTOP' | 'SIGCONT') => {
    const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0])
    const children = childrenOf(postmaster)
    for (const pid of signal === 'SIGSTOP' ? [postmaster, ...children] : [...children, postmaster]) {
      try {
        process.kill(pid, signal)
      } catch {
        // A child that exited in between has nothing left to freeze.
      }
    }
    frozen = signal === 'SIGSTOP'
  }
  const thaw = () => {
    if (frozen) signalAll('SIGCONT')
  }
  process.once('exit', () => {
    // pg_ctl would wait forever for a frozen server to stop.
    thaw()
    if (running) spawnSync(...asServerUser(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']))
    rmSync(directory, { recursive: true, force: true })
  })
  return {
    createDatabase: databaseFactory(`postgres://postgres@127.0.0.1:${port}/postgres`, { sweep: false }),
    socketDirectory: directory,
    stop(mode) {
      if (!running) return
      thaw()
      stop(mode)
      running = false
    },
    start() {
      if (running) return
      start()
      running = true
    },
    freeze() {
      if (running && !frozen) signalAll('SIGSTOP')
    },
    thaw,
    controllable: true,
  }
}

function postgresOwner(): [number, number] {
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
  return [uid, gid]
}

function assertNever(message: string): never {
  throw new Error(message)
}
