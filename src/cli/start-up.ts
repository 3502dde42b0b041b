import cluster from 'node:cluster'
import { isatty } from 'node:tty'
import type { Logger } from 'pino'
import { type Config, loadConfig, settingsEnvironment } from '../config.ts'
import { readEnvironment } from '../environment-file.ts'
import { BufferedLogOutput } from '../log/log-output.ts'
import { createLogger, reportDroppedLogLines, wantsPrettyLogs } from '../log/logger.ts'
import type { Output } from './command.ts'

// Read from the working directory, under the environment (README, "Configuration").
const SETTINGS_FILE = '.env'

/**
 * What every command starts from, once per process: the configuration, read and decoded (and `settings`
 * as read, for the processes a supervisor starts), and the process logger made from it (human-readable on
 * `terminal`, if given, when LOG_FORMAT allows). A server's JSON log is buffered (`bufferedLog`): one line
 * per request must not cost a write each. A command whose standard output is its result (`openapi`) logs
 * nothing there (`silent`). The log goes to descriptor `logFd`:
 * a server's stdout, or in a worker the one its supervisor gave it (supervisor/worker-stdio.ts); by
 * default another command's stderr, as its stdout holds its results (a key, a list). `terminal` is that
 * descriptor's, to tell whether it is a terminal.
 */
export function startUp(
  terminal?: Pick<Output, 'isTTY'>,
  { bufferedLog = false, silent = false, logFd = 2 } = {},
): { config: Config; log: Logger; settings: Record<string, string> } {
  // A WORKERS worker is given every setting by its supervisor, as read at the service's start: `.env`
  // edited (or made unreadable) since is not read again.
  const { environment, warnings } = cluster.isWorker
    ? { environment: process.env, warnings: [] }
    : readEnvironment(SETTINGS_FILE, process.env)
  const config = loadConfig(environment)
  const settings = settingsEnvironment(environment)
  if (silent) return { config, log: createLogger({ level: 'silent' }), settings }
  const pretty = terminal !== undefined &&
    wantsPrettyLogs(config.log, terminal) && { colors: colorsOn(logFd, environment) }
  const output =
    pretty || !bufferedLog ? undefined : new BufferedLogOutput({ shared: config.workers !== 1, fd: logFd })
  const log = createLogger(config.log, pretty, output, logFd)
  // Said by the process that read the file: a WORKERS worker's settings come from its supervisor.
  for (const warning of warnings) log.warn(warning)
  // A server's, pretty too: a supervisor's relay of its workers' output is buffered whatever its log is.
  if (bufferedLog) reportDroppedLogLines(log, output)
  return { config, log, settings }
}

/**
 * Whether pretty lines on `fd` are coloured: NO_COLOR, FORCE_COLOR, else a terminal whose TERM is not
 * dumb. pino-pretty's own default (colorette's) looks at descriptor 1, which is not a worker's log.
 */
function colorsOn(fd: number, env: NodeJS.ProcessEnv): boolean {
  if ('NO_COLOR' in env) return false
  return (
    'FORCE_COLOR' in env || (isatty(fd) && env.TERM !== undefined && env.TERM !== '' && env.TERM !== 'dumb')
  )
}
