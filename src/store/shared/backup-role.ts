/**
 * The backup role an engine may have (`<engine>-backup.ts`): `petstore backup` and `restore` speak to it
 * alone. SQLite's copies and replaces its file, carrying forward what the replaced one holds; PostgreSQL's
 * leaves copying to pg_dump and pg_restore, and carries forward into the database pg_restore made.
 */
export interface BackupRole {
  /** Copies the live database at `path` to the file `to`, replacing one there only with `force`. */
  backupDatabase(path: string, to: string, options?: { force?: boolean }): Promise<BackupSummary>
  /** Puts the backup `from` in place of the database at `path`. */
  restoreDatabase(from: string, path: string): RestoreSummary
  /** Keeps in the restored database `restored` what the database it replaces (`replacing`) must pass on. */
  carryForward(replacing: string, restored: string): Promise<CarriedForward>
}

/** What a backup or a restore put in place. */
export interface BackupSummary {
  pets: bigint
  bytes: number
}

/** What a restore put in place, and what it did with the database it replaced (none on a first one). */
export interface RestoreSummary extends BackupSummary {
  replaced?: CarriedForward & {
    /** Where it is kept, or why it could not be (a volume that takes no second name for a file). */
    keptAt: { path: string } | { notKept: string }
  }
}

/** What a restore kept of the database it replaces, part by part: a damaged one may give only some. */
export interface CarriedForward {
  /** Its pets, if they could be counted. */
  replacedPets: bigint | undefined
  /** Sessions of the service it ended first (PostgreSQL: opened before the database was made read-only). */
  sessionsEnded?: number
  /** Keys revoked there that the backup holds active, revoked again; undefined if they could not be read. */
  revocations: number | undefined
  /** The highest pet id given out there, past which the id sequences were raised; undefined if unread. */
  petIdsGivenUpTo: bigint | undefined
  /** Names of active keys there that the backup does not hold (made since it was taken): gone with it. */
  keysNotInBackup: string[] | undefined
  /** The first read of the replaced database that failed (it is damaged), if one did. */
  unreadable: string | undefined
}
