import type { FastifyRequest } from 'fastify'
import pino, { type Logger } from 'pino'
import { maskApiKeys } from './auth/api-key.ts'
import type { Config } from './config.ts'

/**
 * The process logger: JSON lines to stdout. Keys never reach it: `Authorization` is redacted wherever
 * headers are logged, and a key a client put in the URL by mistake is masked in the logged URL.
 */
export function createLogger(config: Pick<Config, 'LOG_LEVEL'>): Logger {
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
        host: request.host,
        remoteAddress: request.ip,
        remotePort: request.socket?.remotePort,
      }),
    },
  })
}
