import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { Redis } from 'ioredis'
import { within } from './bounded-wait.ts'
import { freePort } from './free-port.ts'
import { suiteNeeding } from './suite-requirements.ts'
import type { TestCertificates } from './test-certificates.ts'

/** `describe` options: skipped with one line when redis-server is missing, except under CI, where that fails. */
export function redisSuiteOptions(): { skip?: string } {
  const installed = spawnSync('redis-server', ['--version']).status === 0
  return suiteNeeding(
    'the Redis suites',
    installed
      ? undefined
      : { missing: 'no redis-server on this machine', remedy: 'apt-get install redis-server' },
  )
}

export interface RedisServer {
  url: string
  /** Kills the server at once (as a crash would); its data is gone. */
  stop(): Promise<void>
  /** Starts a new, empty server on the same port after `stop()`, as a supervisor would. */
  restart(): Promise<void>
  /** Stops the server's process (SIGSTOP): connections stay open and nothing answers, as on a hung host. */
  freeze(): void
  /** Resumes it (SIGCONT). */
  thaw(): void
  /** How many keys it holds, asked on a connection of the test's own. */
  keyCount(): Promise<number>
}

interface RedisProcess {
  child: ChildProcess
  exited: Promise<void>
}

async function spawnRedis(
  port: number,
  password: string | undefined,
  tls: TestCertificates | undefined,
): Promise<RedisProcess> {
  const auth = password === undefined ? [] : ['--requirepass', password]
  // With TLS, only TLS: its port is the one given, and clients need no certificate of their own.
  const listen =
    tls === undefined
      ? ['--port', String(port)]
      : ['--port', '0', '--tls-port', String(port), '--tls-cert-file', tls.cert, '--tls-key-file', tls.key]
  const tlsClients = tls === undefined ? [] : ['--tls-ca-cert-file', tls.ca, '--tls-auth-clients', 'no']
  const child: ChildProcess = spawn(
    'redis-server',
    [...listen, ...tlsClients, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...auth],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  // Killed if the test process ends first, and forgotten once it exits: many servers, no listeners left.
  const killOnExit = () => child.kill('SIGKILL')
  process.once('exit', killOnExit)
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      process.off('exit', killOnExit)
      resolve()
    }),
  )
  await new Promise<void>((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${output}`)), 10_000)
    child.stdout?.on('data', (chunk) => {
      output += chunk
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer)
        resolve()
      }
    })
    exited.then(() => {
      clearTimeout(timer)
      reject(new Error(`redis-server exited before it was ready: ${output}`))
    })
  })
  return { child, exited }
}

/**
 * A throwaway redis-server on a free loopback port, without persistence; with `password`, it asks for it
 * (`url` then holds none: the test says which to give); with `tls`, it takes TLS connections only, with
 * that certificate (`url` is then `rediss://`).
 */
export async function startRedis({
  password,
  tls,
}: {
  password?: string
  tls?: TestCertificates
} = {}): Promise<RedisServer> {
  const port = await freePort()
  let current = await spawnRedis(port, password, tls)
  const url = `${tls === undefined ? 'redis' : 'rediss'}://127.0.0.1:${port}`
  return {
    url,
    async stop() {
      current.child.kill('SIGKILL')
      await within(current.exited, 10_000, 'redis-server did not exit after SIGKILL')
    },
    async restart() {
      current = await spawnRedis(port, password, tls)
    },
    freeze() {
      current.child.kill('SIGSTOP')
    },
    thaw() {
      current.child.kill('SIGCONT')
    },
    async keyCount() {
      const client = new Redis(url, {
        ...(password === undefined ? {} : { password }),
        ...(tls === undefined ? {} : { tls: { ca: readFileSync(tls.ca) } }),
        maxRetriesPerRequest: 1,
      })
      try {
        return await client.dbsize()
      } finally {
        client.disconnect()
      }
    },
  }
}

/** Resolves once `redis` is connected: connectRedis gives it back a second into an outage, or on a loaded machine. */
export async function connected(redis: Redis): Promise<void> {
  if (redis.status !== 'ready') await within(once(redis, 'ready'), 5000, 'connected to Redis')
}
