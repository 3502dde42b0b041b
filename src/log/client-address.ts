import { isIP } from 'node:net'

/**
 * The client's address as logged: `request.ip` (the socket's, or the client a trusted proxy's
 * X-Forwarded-For names), unless that names something that is not an IP address (a forged field, a port
 * appended): then the socket's, the proxy's own, rather than text a client may have written.
 */
export function clientAddressOf(request: {
  ip: string
  socket: { remoteAddress?: string | undefined }
}): string | undefined {
  const { ip } = request
  const peer = request.socket.remoteAddress
  return ip === peer || isIP(ip) !== 0 ? ip : peer
}
