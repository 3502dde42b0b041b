import { fileURLToPath } from 'node:url'
import type { LoadResult, LoadSpec } from './load.ts'
import { LOAD_CORE, runNodeForJson } from './processes.ts'

const LOAD_SCRIPT = fileURLToPath(new URL('./load.ts', import.meta.url))

/**
 * Warms up each target, then measures them in turns of one slice each, in a fresh load-generator process on
 * the load core; one result per target, in the spec's order.
 */
export function runLoad(spec: LoadSpec): Promise<LoadResult[]> {
  return runNodeForJson<LoadResult[]>(LOAD_CORE, [LOAD_SCRIPT, JSON.stringify(spec)], 'load generator').result
}
