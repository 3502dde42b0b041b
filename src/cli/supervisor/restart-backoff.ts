// A worker that dies is replaced after a pause that grows with repeated crashes, so a worker that cannot
// start does not spin the CPU; a worker that ran for STABLE_AFTER_MS without a crash starts the scale over.
const RESTART_DELAY_MS = [100, 500, 1000, 5000]
const STABLE_AFTER_MS = 30_000

/**
 * The supervisor's memory of recent crashes. Crashes older than STABLE_AFTER_MS are forgotten (pruned, not
 * just ignored), so a service that runs for months with the odd crash keeps a handful of entries.
 */
export class RestartBackoff {
  readonly #crashes: number[] = []

  /** Records a crash at `now` (monotonic ms) and returns how long to wait before starting a replacement. */
  delayAfterCrash(now: number): number {
    while (this.#crashes.length > 0 && now - (this.#crashes[0] as number) >= STABLE_AFTER_MS) {
      this.#crashes.shift()
    }
    this.#crashes.push(now)
    const step = Math.min(this.#crashes.length, RESTART_DELAY_MS.length) - 1
    return RESTART_DELAY_MS[step] as number
  }

  /** How many crashes are remembered (those of the last STABLE_AFTER_MS). */
  get remembered(): number {
    return this.#crashes.length
  }
}
