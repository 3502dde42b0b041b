import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

/** Inodes of the sockets this process holds open (Linux: its descriptors that name a socket). */
function ownSocketInodes(): Set<string> {
  const inodes = new Set<string>()
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`))?.[1]
      if (inode !== undefined) inodes.add(inode)
    } catch {
      // A descriptor closed between the listing and the read holds nothing.
    }
  }
  return inodes
}

/**
 * TCP connections to `port` that this process still holds open (Linux: the rows of /proc/net/tcp and
 * tcp6 with that remote port whose socket is one of this process's descriptors). A socket destroyed is
 * gone at once; one ended politely stays, half-closed, until the other side closes too. Sockets to other
 * ports (other tests' servers, the test runner's own) are never counted.
 */
export function connectionsTo(port: number): number {
  const own = ownSocketInodes()
  let count = 0
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let rows: string[]
    try {
      rows = readFileSync(table, 'utf8').split('\n').slice(1)
    } catch {
      continue // no IPv6 on this machine
    }
    for (const row of rows) {
      // sl, local address, remote address (hex address:hex port), state, …, inode (the tenth field)
      const [, , remote = '', , , , , , , inode = ''] = row.trim().split(/\s+/)
      const remotePort = Number.parseInt(remote.slice(remote.lastIndexOf(':') + 1), 16)
      if (remotePort === port && own.has(inode)) count++
    }
  }
  return count
}
