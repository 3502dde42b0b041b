import type { StoreHealth } from '../store.ts'

/**
 * Readiness beyond reachability. Nothing is kept per instance: the server is shared by every instance, its
 * own faults (a full disk is SQLSTATE 53100) answer each call with 503, and an unreachable server already
 * fails readiness.
 */
export function postgresHealth(): Promise<StoreHealth> {
  return Promise.resolve({ writable: true })
}
