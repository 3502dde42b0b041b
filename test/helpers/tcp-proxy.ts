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
  /**
   * The connections forwarded so far pass nothing more either way and stay open, as a peer gone without a
   * reset (or a failover that moved the address) leaves them; new ones are forwarded.
   */
  mute(): void
  /** The connections forwarded so far are reset at their next use, as a proxy that closed them while idle. */
  resetAtNextUse(): void
  /**
   * What the server sends on the connections forwarded so far (its end included) reaches the client only
   * with the client's next write, all at once: as a session the server ended while idle, whose news a
   * busy client has not read yet when it sends its next statement.
   */
  holdUntilNextUse(): void
}

/**
 * A loopback TCP server handing each connection to `handle`, with `track` for the sockets it opens in
 * turn; every one is destroyed, and the server closed, after the test. Resolves with its port.
 */
export async function trackedServer(
  t: Cleanup,
  handle: (client: Socket, track: (socket: Socket) => void) => void,
): Promise<{ port: number; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>()
  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
  }
  const server = createServer((client) => {
    track(client)
    handle(client, track)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  )
  return { port: (server.address() as AddressInfo).port, sockets }
}

/**
 * A TCP proxy in front of the server at `targetUrl` (closed after the test). With `batchMs`, what the
 * server sends is held and passed on every `batchMs`, as a busy network delivers it: several of its
 * messages in one read of the client's.
 */
export async function startTcpProxy(
  t: Cleanup,
  targetUrl: string,
  { batchMs }: { batchMs?: number } = {},
): Promise<TcpProxy> {
  const target = new URL(targetUrl)
  let silent = false
  const pairs: Array<{ client: Socket; upstream: Socket; closeClient: () => void }> = []
  const { port, sockets } = await trackedServer(t, (client, track) => {
    if (silent) return
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) })
    track(upstream)
    const closeClient = () => client.destroy()
    pairs.push({ client, upstream, closeClient })
    client.pipe(upstream)
    client.on('close', () => upstream.destroy())
    if (batchMs !== undefined) return passInBatches(upstream, client, batchMs)
    upstream.pipe(client)
    upstream.on('close', closeClient)
  })
  const url = new URL(targetUrl)
  url.hostname = '127.0.0.1'
  url.port = String(port)
  return {
    url: url.toString(),
    silence() {
      silent = true
      for (const socket of sockets) socket.destroy()
    },
    restore() {
      silent = false
    },
    mute() {
      for (const { client, upstream } of pairs.splice(0)) {
        client.unpipe(upstream)
        upstream.unpipe(client)
        client.pause()
        upstream.pause()
      }
    },
    resetAtNextUse() {
      for (const { client, upstream } of pairs.splice(0)) {
        client.unpipe(upstream)
        client.once('data', () => {
          client.resetAndDestroy()
          upstream.destroy()
        })
        // Unpiped, it was paused: a listener alone would never be told of what comes.
        client.resume()
      }
    },
    holdUntilNextUse() {
      for (const { client, upstream, closeClient } of pairs.splice(0)) {
        upstream.unpipe(client)
        upstream.off('close', closeClient)
        let held: Buffer[] | undefined = []
        let ended = false
        upstream.on('data', (chunk: Buffer) => (held === undefined ? client.write(chunk) : held.push(chunk)))
        upstream.on('close', () => {
          if (held === undefined) client.end()
          else ended = true
        })
        upstream.resume()
        // Unpiped, as the server's end would unpipe (and pause) it: its writes are passed on here.
        client.unpipe(upstream)
        client.on('data', (chunk: Buffer) => {
          if (!upstream.destroyed) upstream.write(chunk)
          if (held === undefined) return
          client.write(Buffer.concat(held))
          held = undefined
          if (ended) client.end()
        })
        client.resume()
      }
    },
  }
}

/** Passes what `from` sends on to `to` every `batchMs`, in one write; its end once the last batch is out. */
function passInBatches(from: Socket, to: Socket, batchMs: number): void {
  let held: Buffer[] = []
  const pass = () => {
    if (held.length > 0 && !to.destroyed) to.write(Buffer.concat(held))
    held = []
  }
  const timer = setInterval(pass, batchMs)
  from.on('data', (chunk: Buffer) => held.push(chunk))
  from.on('close', () => {
    clearInterval(timer)
    setTimeout(() => {
      pass()
      to.end()
    }, batchMs)
  })
}
