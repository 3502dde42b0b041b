/** What the process holds now, in its heap and in buffers outside it. */
function heldBytes(): number {
  const { heapUsed, arrayBuffers } = process.memoryUsage()
  return heapUsed + arrayBuffers
}

/**
 * The most the process came to hold beyond what it held before `load` ran, looked at 10 times 200 ms
 * apart once it has (garbage not yet collected counts too).
 */
export async function mostHeldAfter(load: () => void): Promise<number> {
  const before = heldBytes()
  load()
  let most = 0
  for (let check = 0; check < 10; check++) {
    await new Promise((resolve) => setTimeout(resolve, 200))
    most = Math.max(most, heldBytes() - before)
  }
  return most
}
