export { carryForward } from './postgres-restore-carry.ts'

/** What to do instead, said by both commands: PostgreSQL has its own tools for this, and they are tested. */
const RUNBOOK =
  'on PostgreSQL, back up with pg_dump -Fc, restore with pg_restore into a new database, then run ' +
  'petstore restore --replacing (README, "Backups and restores")'

/** `petstore backup` does not run on PostgreSQL; the refusal points to the runbook. */
export function backupDatabase(): never {
  throw new Error(`backup copies a SQLite file only: ${RUNBOOK}`)
}

/** `petstore restore` does not run on PostgreSQL; the refusal points to the runbook. */
export function restoreDatabase(): never {
  throw new Error(`restore replaces a SQLite file only: ${RUNBOOK}`)
}
