import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { Redis } from 'ioredis'
import { within } from './bounded-wait.ts'
import { suiteNeeding } from './suite-requirements.ts'

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

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer()
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
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
}

interface RedisProcess {
  child: ChildProcess
  exited: Promise<void>
}

async function spawnRedis(port: number, password: string | undefined): Promise<RedisProcess> {
  const auth = password === undefined ? [] : ['--requirepass', password]
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...auth],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  process.once('exit', () => child.kill('SIGKILL'))
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
 * (`url` then holds none: the test says which to give).
 */
export async function startRedis({ password }: { password?: string } = {}): Promise<RedisServer> {
  const port = await freePort()
  let current = await spawnRedis(port, password)
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      current.child.kill('SIGKILL')
      await within(current.exited, 10_000, 'redis-server did not exit after SIGKILL')
    },
    async restart() {
      current = await spawnRedis(port, password)
    },
    freeze() {
      current.child.kill('SIGSTOP')
    },
    thaw() {
      current.child.kill('SIGCONT')
    },
  }
}

/** Resolves once `redis` is connected: connectRedis gives it back a second into an outage, or on a loaded machine. */
export async function connected(redis: Redis): Promise<void> {
  if (redis.status !== 'ready') await within(once(redis, 'ready'), 5000, 'connected to Redis')
}
