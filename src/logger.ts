import type { FastifyRequest } from 'fastify'
import pino, { type Logger } from 'pino'
import { maskApiKeys } from './auth/api-key.ts'

/** The `LOG_LEVEL` and `LOG_FORMAT` settings. */
export interface LogSettings {
  level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  /** `auto` is pretty on a terminal and JSON otherwise. */
  format: 'auto' | 'json' | 'pretty'
}

/**
 * The process logger, made once by the command that runs. Keys never reach its output: `Authorization`
 * is redacted wherever headers are logged, and every line is searched for anything shaped like a key,
 * plain or percent-encoded, just before it is written (a key pasted into a URL, sent as a request id,
 * echoed in an error message), so no field that may one day hold client input can leak one. JSON lines
 * for machines; with `pretty` (a terminal, by default), human-readable lines through pino-pretty, made
 * from the masked JSON.
 */
export function createLogger({ level }: Pick<LogSettings, 'level'>, pretty = false): Logger {
  return pino({
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'],
      censor: '[redacted]',
    },
    hooks: { streamWrite: maskApiKeys },
    serializers: {
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: maskApiKeys(request.url),
        remoteAddress: request.ip,
      }),
    },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } } : {}),
  })
}

/** Whether logs should be pretty: asked for, or `auto` on a terminal. */
export function wantsPrettyLogs(
  { format }: Pick<LogSettings, 'format'>,
  terminal: { isTTY?: boolean },
): boolean {
  return format === 'pretty' || (format === 'auto' && terminal.isTTY === true)
}
