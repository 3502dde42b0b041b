import { type AddressInfo, createConnection, createServer, type Socket } from 'node:net'
import type { Cleanup } from './cleanup.ts'

export interface TcpProxy {
  /** The target's URL with its host and port replaced by the proxy's. */
  url: string
  /**
   * From now on the address still accepts connections but never answers, as a host that hangs: the
   * connections forwarded so far are cut, and new ones are held open in silence.
   */
  silence(): void
  /** Forwards new connections again. */
  restore(): void
}

/** A TCP proxy in front of the server at `targetUrl` (closed after the test). */
export async function startTcpProxy(t: Cleanup, targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl)
  const sockets = new Set<Socket>()
  let silent = false
  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
  }
  const server = createServer((client) => {
    track(client)
    if (silent) return
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) })
    track(upstream)
    client.pipe(upstream).pipe(client)
    const cut = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on('close', cut)
    upstream.on('close', cut)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  )
  const url = new URL(targetUrl)
  url.hostname = '127.0.0.1'
  url.port = String((server.address() as AddressInfo).port)
  return {
    url: url.toString(),
    silence() {
      silent = true
      for (const socket of sockets) socket.destroy()
    },
    restore() {
      silent = false
    },
  }
}
