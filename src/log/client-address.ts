import { isIP } from 'node:net'

// How some balancers write a client with its port: `203.0.113.7:80`, `[2001:db8::1]:443`.
const WITH_PORT = /^(?:([\d.]+)|\[([\da-fA-F:.]+)\]):(\d{1,5})$/

/**
 * The client's address as logged: `request.ip` (the socket's, or the client a trusted proxy's
 * X-Forwarded-For names, without the port some balancers append), unless that names something that is
 * not an IP address (a forged field): then the socket's, the proxy's own, rather than text a client may
 * have written.
 */
export function clientAddressOf(request: {
  ip: string
  socket: { remoteAddress?: string | undefined }
}): string | undefined {
  const { ip } = request
  const peer = request.socket.remoteAddress
  if (ip === peer || isIP(ip) !== 0) return ip
  const [, v4, v6, port] = WITH_PORT.exec(ip) ?? []
  const address = v4 ?? v6
  return address !== undefined && isIP(address) !== 0 && Number(port) <= 65535 ? address : peer
}
