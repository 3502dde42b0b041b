import type { Logger } from 'pino'
import { type Config, loadConfig } from '../config.ts'
import { createLogger, wantsPrettyLogs } from '../logger.ts'
import type { Output } from './command.ts'

/**
 * What every command starts from, once per process: the configuration, read and decoded, and the process
 * logger made from it (human-readable on `terminal`, if given, when LOG_FORMAT allows).
 */
export function startUp(terminal?: Output): { config: Config; log: Logger } {
  const config = loadConfig()
  const pretty = terminal !== undefined && wantsPrettyLogs(config.log, terminal)
  return { config, log: createLogger(config.log, pretty) }
}
