/**
 * A worker's node flags: the supervisor's, with V8's helper threads sized for the worker's share of the
 * cores, less its own thread, one at least. Node's default, four a process, or `--v8-pool-size=0`, every
 * core less one, would give each of WORKERS=auto's workers helpers enough for the whole machine, which
 * take the cores from the other workers' main threads while it collects (docs/decisions.md, "V8's helper
 * threads sized by the cores"). A size given on the command line other than 0 is the operator's, kept.
 */
export function workerNodeFlags(flags: readonly string[], workers: number, cores: number): string[] {
  const given = flags.findLast((flag) => flag.startsWith('--v8-pool-size='))
  if (given !== undefined && given !== '--v8-pool-size=0') return [...flags]
  return [...flags, `--v8-pool-size=${Math.max(1, Math.floor(cores / workers) - 1)}`]
}
