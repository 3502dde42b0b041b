import { fileURLToPath } from 'node:url'
import type { LoadResult, LoadSpec } from './load.ts'
import { LOAD_CORE, spawnTracked } from './processes.ts'

const LOAD_SCRIPT = fileURLToPath(new URL('./load.ts', import.meta.url))

/**
 * Warms up each target, then measures them in turns of one slice each, in a fresh load-generator process on
 * the load core; one result per target, in the spec's order.
 */
export async function runLoad(spec: LoadSpec): Promise<LoadResult[]> {
  const child = spawnTracked(LOAD_CORE, process.execPath, [LOAD_SCRIPT, JSON.stringify(spec)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr?.on('data', (chunk) => {
    stderr += chunk
  })
  // 'close', not 'exit': only then has every byte of its output been read.
  await new Promise((resolve) => child.once('close', resolve))
  if (child.exitCode !== 0) {
    throw new Error(`load generator failed (${child.exitCode ?? child.signalCode}):\n${stderr}`)
  }
  const line = stdout.trim().split('\n').at(-1) ?? ''
  try {
    return JSON.parse(line) as LoadResult[]
  } catch {
    throw new Error(`load generator printed no result:\n${stdout}\n${stderr}`)
  }
}
