import type { FastifyRequest } from 'fastify'
import pino, { type Logger } from 'pino'
import { maskApiKeys } from './auth/api-key.ts'
import type { Config } from './config.ts'

/**
 * The process logger. Keys never reach its output: `Authorization` is redacted wherever headers are
 * logged, and every line is searched for anything shaped like a key, plain or percent-encoded, just before
 * it is written (a key pasted into a URL, sent as a request id, echoed in an error message), so no field
 * that may one day hold client input can leak one. JSON lines for machines; with `pretty` (a terminal, by
 * default), human-readable lines through pino-pretty, made from the masked JSON.
 */
export function createLogger(config: Pick<Config, 'LOG_LEVEL'>, pretty = false): Logger {
  return pino({
    level: config.LOG_LEVEL,
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
export function wantsPrettyLogs(config: Pick<Config, 'LOG_FORMAT'>, terminal: { isTTY?: boolean }): boolean {
  return config.LOG_FORMAT === 'pretty' || (config.LOG_FORMAT === 'auto' && terminal.isTTY === true)
}
