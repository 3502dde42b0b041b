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
 * What every command starts from, once per process: the configuration read and decoded, and the process
 * logger (pretty on a `terminal` if LOG_FORMAT allows; none for `silent`) on descriptor `logFd`: a server's
 * stdout, a worker's log, else stderr, as a command's stdout holds its result. A server's log is buffered,
 * as every request logs (docs/decisions.md, "The request log is buffered").
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
