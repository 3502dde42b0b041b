import { isIP } from 'node:net'

// The longest address with a zone an interface can have (45 characters, `%`, a 15-character name):
// `isIP` takes a zone of any length, and a forwarded one would make the line as long as the header.
const ADDRESS_MAX = 61
// How some balancers write a client with its port: `203.0.113.7:80`, `[2001:db8::1]:443`.
const WITH_PORT = /^(?:(\d{1,3}(?:\.\d{1,3}){3})|\[([\da-fA-F:.]+)\]):([1-9]\d{0,4})$/

/** The address of an X-Forwarded-For entry written with the port some balancers append, else undefined. */
export function withoutPort(entry: string): string | undefined {
  const [, v4, v6, port] = WITH_PORT.exec(entry) ?? []
  const address = v4 ?? v6
  const valid = address !== undefined && isIP(address) === (v4 === undefined ? 6 : 4) && Number(port) <= 65535
  return valid ? address : undefined
}

/**
 * The client's address as logged: `request.ip` (the socket's, or the client a trusted proxy names) without a
 * port some balancers append; the socket's when that is no IP address (a forged field), so no client text
 * is logged as one (docs/decisions.md, "The client on the access line").
 */
export function clientAddressOf(
  request: { ip: string; socket: { remoteAddress?: string | undefined } },
  trustsProxy = true,
): string | undefined {
  const { ip } = request
  // Nothing a client wrote: the socket's address is read once, not again to compare (docs/decisions.md, "The client on the access line").
  if (!trustsProxy) return ip
  const peer = request.socket.remoteAddress
  if (ip === peer || (ip.length <= ADDRESS_MAX && isIP(ip) !== 0)) return ip
  return withoutPort(ip) ?? peer
}
