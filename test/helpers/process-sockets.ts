import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

/** Inodes of the sockets a process holds open (Linux: its descriptors that name a socket); none once it exits. */
function socketInodes(pid: number | 'self'): Set<string> {
  const inodes = new Set<string>()
  let fds: string[]
  try {
    fds = readdirSync(`/proc/${pid}/fd`)
  } catch {
    return inodes // It has exited.
  }
  for (const fd of fds) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1]
      if (inode !== undefined) inodes.add(inode)
    } catch {
      // A descriptor closed between the listing and the read holds nothing.
    }
  }
  return inodes
}

/** The rows of /proc/net/tcp and tcp6: local and remote address (hex address:hex port), state, inode. */
function* tcpSockets(): Generator<{ localPort: number; remotePort: number; state: string; inode: string }> {
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let rows: string[]
    try {
      rows = readFileSync(table, 'utf8').split('\n').slice(1)
    } catch {
      continue // no IPv6 on this machine
    }
    for (const row of rows) {
      // sl, local address, remote address, state, …, inode (the tenth field)
      const [, local = '', remote = '', state = '', , , , , , inode = ''] = row.trim().split(/\s+/)
      const port = (address: string) => Number.parseInt(address.slice(address.lastIndexOf(':') + 1), 16)
      yield { localPort: port(local), remotePort: port(remote), state, inode }
    }
  }
}

/**
 * TCP connections to `port` that this process still holds open (Linux: the rows of /proc/net/tcp and
 * tcp6 with that remote port whose socket is one of this process's descriptors). A socket destroyed is
 * gone at once; one ended politely stays, half-closed, until the other side closes too. Sockets to other
 * ports (other tests' servers, the test runner's own) are never counted.
 */
export function connectionsTo(port: number): number {
  const own = socketInodes('self')
  let count = 0
  for (const socket of tcpSockets()) if (socket.remotePort === port && own.has(socket.inode)) count++
  return count
}

/** The TCP ports process `pid` listens on (state 0A, LISTEN), ascending; none once it has exited. */
export function listeningPorts(pid: number): number[] {
  const own = socketInodes(pid)
  const ports = new Set<number>()
  for (const socket of tcpSockets())
    if (socket.state === '0A' && own.has(socket.inode)) ports.add(socket.localPort)
  return [...ports].sort((a, b) => a - b)
}
