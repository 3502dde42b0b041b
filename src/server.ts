import type { FastifyInstance } from 'fastify'
import type { Config } from './config.ts'

export interface RunningServer {
  /** The base URL the server listens on, e.g. `http://127.0.0.1:8080`. */
  url: string
  /** Stops accepting, lets in-flight requests finish (bounded by SHUTDOWN_TIMEOUT_MS), then runs `onClosed`. */
  shutdown(): Promise<void>
}

/**
 * Listens, and on SIGTERM or SIGINT drains: new requests get 503 and `Connection: close`, in-flight ones
 * finish, idle connections close; connections still busy after `SHUTDOWN_TIMEOUT_MS` are cut. `onClosed`
 * (closing the store) runs last, so every acknowledged write is committed before the process exits.
 */
export async function startServer(
  app: FastifyInstance,
  config: Config,
  onClosed: () => Promise<void>,
): Promise<RunningServer> {
  await app.listen({ host: config.HOST, port: config.PORT })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : config.PORT
  const host = config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST

  let closing: Promise<void> | undefined
  const shutdown = () => {
    closing ??= (async () => {
      const force = setTimeout(() => app.server.closeAllConnections(), config.SHUTDOWN_TIMEOUT_MS)
      force.unref()
      try {
        await app.close()
      } finally {
        clearTimeout(force)
        await onClosed()
      }
    })()
    return closing
  }

  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) return
    app.log.info({ signal }, 'shutting down')
    shutdown().then(
      () => process.exit(0),
      (error: unknown) => {
        app.log.error({ err: error }, 'shutdown failed')
        process.exit(1)
      },
    )
  }
  // `on`, not `once`: a second signal (Ctrl-C twice, or a cluster primary relaying it) must not fall back
  // to Node's default, which would kill the process mid-drain.
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)

  return { url: `http://${host}:${port}`, shutdown }
}
