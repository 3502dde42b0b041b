import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { UsageError } from '../src/cli/command.ts'
import { runEngine } from './engine-run.ts'
import { ENGINE_LABELS, engineUnavailableReason } from './engines.ts'
import { hostPausesNote } from './host-pauses.ts'
import { commandLine, describeEnvironment } from './machine.ts'
import { parseOptions, USAGE } from './options.ts'
import { ownCollectionsNote, watchMajorCollections } from './own-collections.ts'
import { canPin, installCleanup, LOAD_CORE, pinSelfToServerCore, SERVER_CORE } from './processes.ts'
import { markdownReport } from './report.ts'
import { resultsTable } from './report-tables.ts'
import type { EngineRun } from './summary.ts'

// Long enough to see pauses a few seconds apart; short beside a run.
const HOST_PAUSES_S = 10

function pinningNote(serviceEnv: Record<string, string>): string {
  if (!canPin)
    return 'Processes are not pinned to cores (taskset is missing or there are fewer than 2 cores).'
  if ((serviceEnv.WORKERS ?? '1') !== '1') {
    return (
      `WORKERS=${serviceEnv.WORKERS}: the service is not pinned (its workers use every core, the load generator's ` +
      `too); the baselines stay on core ${SERVER_CORE} and the load generator on core ${LOAD_CORE}.`
    )
  }
  return (
    `Service and both baselines pinned to core ${SERVER_CORE}, load generator to core ${LOAD_CORE} (taskset). ` +
    `The PostgreSQL server and the bench's coordinating process (idle while measuring but for reading the ` +
    `serving processes' metrics every 10 s and draining the service's log with \`--log-sink pipe\`) also ` +
    `share core ${SERVER_CORE}.`
  )
}

async function main(args: string[]): Promise<number> {
  let options: ReturnType<typeof parseOptions>
  try {
    options = parseOptions(args)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    process.stderr.write(`bench: ${error.message}\n\n${USAGE}\n`)
    return 2
  }
  if (options === undefined) {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  installCleanup()
  pinSelfToServerCore()
  // Before anything starts, so the load average says what else was running on the machine.
  const environment = describeEnvironment()

  const notes = [pinningNote(options.serviceEnv)]
  // Also before anything starts: the cores must be otherwise idle for their pauses to be the host's.
  if (canPin) notes.push(await hostPausesNote(HOST_PAUSES_S))
  const extraSettings = Object.entries(options.serviceEnv)
  if (extraSettings.length > 0) {
    notes.push(
      `Service settings added: ${extraSettings.map(([name, value]) => `${name}=${value}`).join(' ')}.`,
    )
  }
  const engineRuns: EngineRun[] = []
  const ownCollections = watchMajorCollections()
  for (const engine of options.engines) {
    const reason = engineUnavailableReason(engine)
    if (reason !== undefined) {
      const note = `${ENGINE_LABELS[engine]} skipped: ${reason}.`
      process.stderr.write(`bench: ${note}\n`)
      notes.push(note)
      continue
    }
    const run = await runEngine(engine, options)
    engineRuns.push(run)
    notes.push(`${ENGINE_LABELS[engine]}: ${run.engineVersion}.`)
  }
  notes.push(ownCollectionsNote(await ownCollections.stop()))
  if (engineRuns.length === 0) {
    process.stderr.write('bench: no engine could be measured\n')
    return 1
  }

  // Relative to the repository (npm runs the script there), or absolute as given.
  const reportPath = resolve(fileURLToPath(new URL('..', import.meta.url)), options.output)
  const report = markdownReport({
    environment,
    command: commandLine(args),
    options,
    reportPath,
    engineRuns,
    notes,
  })
  mkdirSync(dirname(reportPath), { recursive: true })
  writeFileSync(reportPath, report)
  process.stdout.write(`\n${resultsTable(engineRuns)}\n\n${notes.join('\n')}\nWritten to ${options.output}\n`)
  return 0
}

// process.exit, not exitCode: it runs the exit hooks that stop every child and the PostgreSQL server.
try {
  process.exit(await main(process.argv.slice(2)))
} catch (error) {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : error}\n`)
  process.exit(1)
}
