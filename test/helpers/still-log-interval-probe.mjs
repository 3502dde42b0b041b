// Preloaded (--import) by tests into the command's process: a timer repeating every 500 ms or more (the
// log's batch interval) never fires, so a line the process does not flush itself stays in its buffer.
// JavaScript so it strips no types.
const setIntervalAsGiven = globalThis.setInterval
globalThis.setInterval = /** @type {typeof setInterval} */ (
  (/** @type {(...args: unknown[]) => void} */ callback, /** @type {number} */ delay, ...args) =>
    setIntervalAsGiven(callback, delay >= 500 ? 2 ** 31 - 1 : delay, ...args)
)
