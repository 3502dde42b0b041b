// Preloaded (--import) by tests into the command's process: each server, once listening, holds the event
// loop for 1.5 s, as the start's last cold code paths do on a busy host (lazy compilation, a process starved
// of CPU). JavaScript so it strips no types.
import net from 'node:net'

const emit = net.Server.prototype.emit
net.Server.prototype.emit = function (
  /** @type {string | symbol} */ event,
  /** @type {unknown[]} */ ...args
) {
  if (event === 'listening') {
    const until = performance.now() + 1500
    while (performance.now() < until);
  }
  return emit.call(this, event, ...args)
}
