import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'

/** What a failed listen means to whoever set the address, by its error code. */
const WHY: Record<string, string> = {
  EADDRINUSE: 'the port is in use',
  EACCES: 'not allowed (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'the address is not one of this machine',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved now',
}

/**
 * `listening`, whose failure names the settings that chose the address: a bare `listen EADDRINUSE` or
 * `getaddrinfo ENOTFOUND` does not say which of the service's two listeners failed.
 */
export async function namingListener<T>(
  listening: Promise<T>,
  settings: string,
  { host, port }: { host: string; port: number },
): Promise<T> {
  try {
    return await listening
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why =
      code === undefined ? (error as Error).message : `${WHY[code] ?? (error as Error).message} (${code})`
    // Most often the instance already running here: the second one's first failure says what both need.
    const hint =
      code === 'EADDRINUSE'
        ? '; a second instance on this machine needs a PORT and a METRICS_PORT of its own (or METRICS=off)'
        : ''
    throw new Error(`cannot listen on ${settings} (${host}:${port}): ${why}${hint}`, { cause: error })
  }
}

/**
 * The listeners' host names looked up before the start makes a database or key: one that does not resolve
 * stops it there, in `namingListener`'s words, rather than at listen, after the store was prepared.
 */
export async function resolveListenerHosts(
  listeners: Array<{ settings: string; address: { host: string; port: number } | undefined }>,
): Promise<void> {
  for (const { settings, address } of listeners) {
    if (address === undefined || isIP(address.host) !== 0) continue
    await namingListener(lookup(address.host), settings, address)
  }
}
