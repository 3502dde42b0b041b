import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { messageWithCause, StoreUnavailableError } from '../errors.ts'
import { kindAt } from '../file-kind.ts'
import { CopyConflictError, SourceKeysActiveError, TargetNotEmptyError } from '../store/shared/copy-errors.ts'
import { type CopySource, type CopyTarget, copyStore } from '../store/shared/store-copy.ts'
import { NoSchemaError } from '../store/store.ts'
import { type Command, CommandError, counted, UsageError } from './command.ts'
import { integerOption, nonEmptyOption, parseCommandArgs } from './command-args.ts'
import {
  discardFailedTarget,
  openCopySource,
  openCopyTarget,
  refuseTargetPath,
  sameFile,
  sqlitePathOf,
} from './open-store.ts'
import { exitStopped, onStopSignal } from './stop-signals.ts'

// Progress lines at most this often, whatever the chunk size: readable in a terminal and in a log.
const PROGRESS_EVERY_MS = 2000

/**
 * A progress line: pets walked of those counted at the start. A source that takes writes meanwhile can
 * hold more than were counted: past the count, no share is made up. Exported so a test can check it.
 */
export function progressLine(walked: number, total: number, perSecond: number): string {
  const done =
    walked <= total
      ? `${walked} of ${counted(total, 'pet')} (${Math.floor((walked / Math.max(total, 1)) * 100)}%`
      : `${counted(walked, 'pet')} (${total} when it started: the source takes writes`
  return `petstore copy: ${done}, ${perSecond}/s)\n`
}

/**
 * Stopped by the operator: the target holds whole chunks, and a re-run finishes it; `beforeExit` says
 * whether it removed a new target that held none yet.
 */
function stopOnSignal(stderr: { write(text: string): unknown }, beforeExit: () => boolean): () => void {
  return onStopSignal((signal) => {
    const held = beforeExit()
      ? 'the new target held no pet yet and is removed'
      : 'the target holds whole chunks: run the same command again to finish'
    // The transaction under way is rolled back.
    exitStopped(stderr, 'copy', signal, `before the end; ${held}`)
  })
}
const SOURCE = '--from (the source)'
const TARGET = '--to (the target)'
type Side = typeof SOURCE | typeof TARGET

/** A store the copy lost (unreachable, busy), said of its side, for the line that says to run it again. */
class CopyStoreLost extends Error {
  /**
   * The store had answered the copy's first call, so it went away (a restart, a network cut) and a re-run
   * may well find it again; at the first call it may never have been reachable as named (a wrong password,
   * a refused certificate), which no re-run mends.
   */
  readonly midway: boolean

  constructor(side: Side, error: StoreUnavailableError, midway: boolean) {
    super(`${side}: ${messageWithCause(error)}`, { cause: error })
    this.name = 'CopyStoreLost'
    this.midway = midway
  }
}

/** `store`, each of its calls failing with StoreUnavailableError said of `side`. */
function onSide<T extends CopySource | CopyTarget>(store: T, side: Side): T {
  let answered = false
  return new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) =>
        (value.apply(target, args) as Promise<unknown>).then(
          (result) => {
            answered = true
            return result
          },
          (error: unknown) => {
            throw error instanceof StoreUnavailableError ? new CopyStoreLost(side, error, answered) : error
          },
        )
    },
  })
}

/** A store named by a path that is there and is no regular file: a FIFO's read waits for a writer for ever. */
function refuseNonFile(option: '--from' | '--to', path: string | undefined): void {
  if (path === undefined) return
  const kind = kindAt(path)
  if (kind !== undefined)
    throw new CommandError(`${option} names ${resolve(path)}, which is ${kind}: name a database file`)
}

/** The exit code of a copy stopped by --max-chunks: not done yet, run it again. */
const INCOMPLETE_EXIT = 3

export const copyCommand: Command = {
  help: `Usage: petstore copy --from STORE --to STORE [--into-non-empty] [--without-keys]
                    [--chunk-size N] [--max-chunks N]

Copies a whole store, e.g. --from sqlite:data/petstore.db --to postgres://user@host:5432/db (either
engine either way; the password in PGPASSWORD: in the URL, every local user sees it in ps): pets with
their ids, API keys (hashes, names, revocations, deprecated-call counts), Idempotency-Key records, and
the cursor-signing secret (cursors issued before stay valid); then sets the target's id sequences past
the highest id. The target's schema is migrated first.
Stop the service on the source first, or run the copy again after stopping it: each run copies what is
missing. A copy that was interrupted (or stopped by --max-chunks, exit ${INCOMPLETE_EXIT}) is completed by a re-run.
Ids are kept: a source pet or key whose id the target gives to another one is a conflict, and the copy
stops (exit 1) naming it; such stores cannot be merged.

  --into-non-empty   copy into a target that holds pets of its own (at other ids; keys of its own
                     collide with the source's, which take the same first ids)
  --without-keys     pets only: no API key (none of the source's works on the target) and no
                     Idempotency-Key record, as for a staging copy of production; a target that holds
                     keys of the source active (an earlier full copy) is refused (exit 1), nothing
                     copied: revoke them there (petstore keys revoke NAME), or copy into a new database
  --chunk-size N     pets per transaction (default 5000)
  --max-chunks N     stop after N chunks that added pets (exit ${INCOMPLETE_EXIT}); run again to continue

Progress goes to stderr every ${PROGRESS_EVERY_MS / 1000} s; the summary to stdout.`,
  async run(args, { stdout, stderr }) {
    const { values } = parseCommandArgs(args, {
      from: { type: 'string' },
      to: { type: 'string' },
      'into-non-empty': { type: 'boolean' },
      'without-keys': { type: 'boolean' },
      'chunk-size': { type: 'string' },
      'max-chunks': { type: 'string' },
    })
    if (values.from === undefined || values.to === undefined)
      throw new UsageError('needs --from STORE and --to STORE')
    // Both named rightly before either is opened.
    const [fromPath, toPath] = [
      sqlitePathOf(nonEmptyOption('from', values.from, 'a STORE'), '--from'),
      sqlitePathOf(nonEmptyOption('to', values.to, 'a STORE'), '--to'),
    ]
    refuseNonFile('--from', fromPath)
    refuseNonFile('--to', toPath)
    if (values.from === values.to || (fromPath !== undefined && sameFile(fromPath, toPath)))
      throw new UsageError('--from and --to name the same store')
    const chunkSize = integerOption('chunk-size', values['chunk-size'], 5000, 100_000)
    const maxChunks =
      values['max-chunks'] === undefined
        ? undefined
        : integerOption('max-chunks', values['max-chunks'], 1, 1e9)
    if (toPath !== undefined) refuseTargetPath(toPath)
    const source = await openCopySource(values.from)
    // A SQLite file this copy makes and fails to put a row in is removed: a start would serve it as a store.
    const madeFile = toPath !== undefined && !existsSync(toPath)
    const discardIfMade = () => madeFile && discardFailedTarget(values.to as string)
    let failed = true
    const target = await openCopyTarget(values.to).catch(async (error) => {
      await source.close()
      discardIfMade()
      throw error
    })
    const started = performance.now()
    let reported = started
    const allowSignals = stopOnSignal(stderr, discardIfMade)
    let walkedAny = false
    try {
      const report = await copyStore(onSide(source, SOURCE), onSide(target, TARGET), {
        chunkSize,
        intoNonEmpty: values['into-non-empty'] ?? false,
        withoutKeys: values['without-keys'] ?? false,
        ...(maxChunks === undefined ? {} : { maxChunks }),
        onProgress(walked, total) {
          walkedAny = true
          const now = performance.now()
          if (now - reported < PROGRESS_EVERY_MS) return
          reported = now
          stderr.write(progressLine(walked, total, Math.round(walked / ((now - started) / 1000))))
        },
      })
      const seconds = ((performance.now() - started) / 1000).toFixed(1)
      const kept = report.sourceKeys - report.keys
      const keys = values['without-keys']
        ? 'no API key copied (--without-keys)'
        : `${counted(report.keys, 'API key')}${kept > 0 ? ` (${kept} already there, brought up to date)` : ''}`
      const records = counted(report.idempotencyRecords, 'idempotency record')
      const summary = `${counted(report.pets, 'pet')}, ${keys}, ${records}`
      failed = false
      if (!report.complete) {
        stdout.write(
          `copied ${summary} in ${seconds} s, then stopped (--max-chunks); run it again to continue\n`,
        )
        return INCOMPLETE_EXIT
      }
      stdout.write(
        `copied ${summary} in ${seconds} s; the next pet id will be above ${report.highestPetId}\n`,
      )
      return 0
    } catch (error) {
      if (
        error instanceof TargetNotEmptyError ||
        error instanceof CopyConflictError ||
        error instanceof SourceKeysActiveError
      )
        throw new CommandError(error.message)
      // Only a source is read as it is: a target without tables is given them.
      if (error instanceof NoSchemaError)
        throw new CommandError(`${SOURCE}: ${error.message}: name a Pet Store database, or a backup of one`)
      if (error instanceof CopyStoreLost) {
        // A store that refuses writes (read-only, its disk full) answered, and its engine says what mends it;
        // one lost at the first call may never have been reachable as named, which no re-run mends.
        const { cause } = error
        const remedy = cause instanceof StoreUnavailableError ? cause.remedy : undefined
        const then = remedy ?? (error.midway ? 'run the same command again once it answers' : undefined)
        const chunks = walkedAny ? 'the target holds whole chunks: ' : ''
        throw new CommandError(then === undefined ? error.message : `${error.message}; ${chunks}${then}`)
      }
      throw error
    } finally {
      allowSignals()
      try {
        await Promise.all([source.close(), target.close()])
      } finally {
        if (failed) discardIfMade()
      }
    }
  },
}
