import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { BaselineFixture } from './baseline-fixture.ts'
import { SERVER_CORE, spawnTracked, stopChild } from './processes.ts'

/** The two baselines: bare node:http, and a minimal Fastify app with the service's schemas. */
export const BASELINE_SCRIPTS = {
  baseline: fileURLToPath(new URL('./baseline-server.ts', import.meta.url)),
  fastify: fileURLToPath(new URL('./fastify-baseline-server.ts', import.meta.url)),
} as const

export interface BaselineProcess {
  origin: string
  pid: number
  stop(): Promise<void>
}

// A baseline waits idle while the other targets run. From the fourth or fifth such wait on, V8's memory
// reducer left each request costing a quarter more for the rest of the process's life; the service's cost
// does not move with it. A ceiling is measured at its best (docs/benchmarks/tuning.md, "Idle baselines").
const NODE_FLAGS = ['--no-memory-reducer']

/** A baseline on the server core, answering from `fixture`. */
export async function startBaseline(
  kind: keyof typeof BASELINE_SCRIPTS,
  fixture: BaselineFixture,
  apiKey: string,
  directory: string,
): Promise<BaselineProcess> {
  const fixturePath = join(directory, `${kind}-fixture.json`)
  writeFileSync(fixturePath, JSON.stringify(fixture))
  const child = spawnTracked(
    SERVER_CORE,
    process.execPath,
    [...NODE_FLAGS, BASELINE_SCRIPTS[kind], fixturePath],
    {
      env: { PATH: process.env.PATH ?? '', BENCH_API_KEY: apiKey },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  const port = await new Promise<number>((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => reject(new Error(`${kind} did not start within 10 s`)), 10_000)
    child.stdout?.on('data', (chunk) => {
      output += chunk
      const match = /listening (\d+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        resolve(Number(match[1]))
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${kind} exited (${code}) before listening`))
    })
  }).catch(async (error) => {
    await stopChild(child)
    throw error
  })
  return { origin: `http://127.0.0.1:${port}`, pid: child.pid as number, stop: () => stopChild(child) }
}
