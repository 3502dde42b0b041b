import { isIP } from 'node:net'
import { compile } from '@fastify/proxy-addr'
import { withoutPort } from '../log/client-address.ts'

/**
 * Fastify's `trustProxy` for TRUSTED_PROXIES: proxy-addr's own check (Fastify's for a list), given an
 * X-Forwarded-For entry without the port some balancers append. The walk from the right then goes past a
 * trusted proxy written `10.0.0.5:1234` and stops at the client, whose port the log drops.
 */
export function proxyTrust(entries: readonly string[]): (address: string, hop: number) => boolean {
  const trusts = compile([...entries])
  return (address, hop) => trusts(isIP(address) === 0 ? (withoutPort(address) ?? address) : address, hop)
}
