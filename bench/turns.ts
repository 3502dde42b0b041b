/**
 * How a round's measured time is cut into turns: an even number of them, about `sliceS` long, adding up
 * to `durationS` per target. Even, so that with the order reversed every other turn (A B C, C B A) each
 * target's mean place in the round is the same.
 */
export function turnsOf(durationS: number, sliceS: number): { count: number; seconds: number } {
  const count = 2 * Math.max(1, Math.round(durationS / sliceS / 2))
  return { count, seconds: durationS / count }
}

/** The bench's pause before and after each turn (`LoadSpec.pauseMs`): long enough for a log batch's write. */
export const TURN_PAUSE_MS = 100
