import { once } from 'node:events'
import { type AddressInfo, createServer, type Socket } from 'node:net'

/**
 * A loopback address that accepts connections and never answers (a hung service or database, a proxy
 * holding the call), closed with its connections after the test; `connected` says whether one came.
 */
export async function silentListener(t: {
  after(fn: () => void): void
}): Promise<{ port: number; connected: () => boolean }> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => sockets.add(socket)).listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.after(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  return { port: (server.address() as AddressInfo).port, connected: () => sockets.size > 0 }
}
