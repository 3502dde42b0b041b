import type { FastifyRequest } from 'fastify'
import pino, { type Logger } from 'pino'
import { maskApiKeys } from './auth/api-key.ts'
import type { Config } from './config.ts'

/**
 * The process logger. Keys never reach it: `Authorization` is redacted wherever headers are logged, and
 * a key a client put in the URL by mistake is masked in the logged URL. JSON lines for machines; with
 * `pretty` (a terminal, by default), human-readable lines through pino-pretty.
 */
export function createLogger(config: Pick<Config, 'LOG_LEVEL'>, pretty = false): Logger {
  return pino({
    level: config.LOG_LEVEL,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'],
      censor: '[redacted]',
    },
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
