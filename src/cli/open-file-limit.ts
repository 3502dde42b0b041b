import { readFileSync } from 'node:fs'
import type { Logger } from 'pino'
import type { DatabaseSettings } from '../config.ts'

// What the service holds open besides its connections and PostgreSQL's pool: its own files, SQLite's
// three, the metrics listener and its clients, Redis, and libuv's own descriptors.
const FILES_OF_ITS_OWN = 64

/**
 * A process's soft limit on open files (RLIMIT_NOFILE), this one's by default, from Linux's /proc;
 * undefined elsewhere.
 */
export function openFileLimit(pid: number | 'self' = 'self'): number | undefined {
  try {
    const limit = /^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))?.[1]
    return limit === undefined ? undefined : Number(limit)
  } catch {
    return undefined
  }
}

/**
 * Warns once at start when the open-file limit is below what MAX_CONNECTIONS allows: past it, the kernel
 * refuses connections before the service sees them, health probes among them, and nothing counts them.
 */
export function warnOfOpenFileLimit(
  maxConnections: number,
  database: DatabaseSettings,
  log: Pick<Logger, 'warn'>,
): void {
  const openFiles = openFileLimit()
  const own = FILES_OF_ITS_OWN + (database.engine === 'postgres' ? database.poolSize : 0)
  if (openFiles === undefined || openFiles >= maxConnections + own) return
  log.warn(
    { openFileLimit: openFiles, maxConnections },
    `the open-file limit (${openFiles}) is below MAX_CONNECTIONS plus the ${own} files the service keeps open: connections past it are refused by the kernel, health probes among them; raise the limit (LimitNOFILE=, --ulimit nofile) or lower MAX_CONNECTIONS`,
  )
}
