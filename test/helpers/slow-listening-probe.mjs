// Preloaded (--import) by tests into the command's process: each server, once listening, holds the event
// loop for 1.5 s, as the start's last cold code paths do on a busy host (lazy compilation, a process starved
// of CPU). JavaScript so it strips no types.
import { writeSync } from 'node:fs'
import net from 'node:net'

const emit = net.Server.prototype.emit
net.Server.prototype.emit = function (
  /** @type {string | symbol} */ event,
  /** @type {unknown[]} */ ...args
) {
  if (event === 'listening') {
    // Said first (stderr is written at once), so a test can queue requests that the stall holds.
    const address = this.address()
    if (address !== null && typeof address === 'object') {
      writeSync(2, `slow-listening-probe: listening on ${address.port}\n`)
    }
    const until = performance.now() + 1500
    while (performance.now() < until);
  }
  return emit.call(this, event, ...args)
}
