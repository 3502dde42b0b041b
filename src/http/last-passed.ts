/**
 * `test`, remembering the last text it passed: a value that repeats from one request to the next (the Host)
 * is compared with it instead of tested again.
 */
export function rememberingLastPass(test: (text: string) => boolean): (text: string) => boolean {
  let lastPassed: string | undefined
  return (text) => {
    if (text === lastPassed) return true
    if (!test(text)) return false
    lastPassed = text
    return true
  }
}
