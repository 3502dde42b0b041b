import pino, { type Logger } from 'pino'
import type { Config } from './config.ts'

/**
 * The process logger: JSON lines to stdout. Credentials are redacted wherever a request or its headers
 * are logged; keys themselves are never passed to the logger.
 */
export function createLogger(config: Pick<Config, 'LOG_LEVEL'>): Logger {
  return pino({
    level: config.LOG_LEVEL,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'],
      censor: '[redacted]',
    },
  })
}
