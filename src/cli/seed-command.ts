import type { NewPet, PetStatus } from '../schemas/pet.ts'
import { type Command, CommandError, counted, failureLine, type Output } from './command.ts'
import { integerOption, parseCommandArgs } from './command-args.ts'
import { openCommandStore } from './open-store.ts'
import { startUp } from './start-up.ts'
import { exitStopped, onStopSignal, signalExitCode } from './stop-signals.ts'

const NAMES = [
  'Bella',
  'Max',
  'Luna',
  'Charlie',
  'Lucy',
  'Cooper',
  'Daisy',
  'Milo',
  'Nala',
  'Rocky',
  'Coco',
  'Oscar',
  'Ruby',
  'Teddy',
  'Willow',
  'Ziggy',
  'Pepper',
  'Biscuit',
  'Mochi',
  'Hazel',
  'Juniper',
  'Pickles',
  'Olive',
  'Tango',
  'Sushi',
  'Waffles',
  'Nugget',
  'Clover',
  'Pumpkin',
  'Sprout',
  'Maple',
  'Gizmo',
]
// Mostly available, as a real store's catalogue is; a few without any status at all.
const STATUSES: Array<PetStatus | undefined> = [
  'available',
  'available',
  'available',
  'available',
  'available',
  'available',
  'pending',
  'pending',
  'sold',
  'sold',
  'sold',
  undefined,
]
const CATEGORIES = 8
const BATCH = 1000

/** A deterministic demo catalogue: the same `--count` always gives the same pets, in the same order. */
function demoPet(index: number): NewPet {
  const pet: NewPet = {
    name: `${NAMES[index % NAMES.length]} ${Math.floor(index / NAMES.length) + 1}`,
    categoryId: BigInt((index % CATEGORIES) + 1),
  }
  const status = STATUSES[(index * 7) % STATUSES.length]
  if (status !== undefined) pet.status = status
  return pet
}

/** How many pets a seed stopped part way added, which stay, and the --count that adds the rest. */
function partLine(added: number, count: number, why: string): string {
  return `added ${added} of ${counted(count, 'pet')} before: ${why} (--count ${count - added} adds the rest)`
}

/**
 * The first stop signal ends a seed after the batch under way, so its line counts what the store holds
 * (while the store opens, at once: nothing is added yet). Every handler goes with it: a second ends it.
 */
function stopOnSignal(stderr: Output) {
  let stopped: NodeJS.Signals | undefined
  let seeding = false
  const release = onStopSignal((signal) => {
    stopped = signal
    if (seeding) return
    exitStopped(stderr, 'seed', signal, 'before adding any pet')
  })
  const started = () => {
    seeding = true
  }
  return { started, stopped: () => stopped, release }
}

export const seedCommand: Command = {
  help: `Usage: petstore seed [--count N]

Adds N demo pets (default 100, at most 10000000) with realistic names, categories 1 to 8 and a mix of
statuses, then prints how many were added. Each run adds more; it never deletes. Stopped part way (a
full disk, Ctrl-C), it says how many it added before, and the --count that adds the rest. A stop
signal (SIGINT, SIGTERM, SIGHUP) ends it after the batch of 1000 under way; a second, at once.`,
  async run(args, { stdout, stderr }) {
    const { values } = parseCommandArgs(args, { count: { type: 'string' } })
    const count = integerOption('count', values.count, 100, 10_000_000)
    const { config, log } = startUp(stderr)
    const stop = stopOnSignal(stderr)
    try {
      const store = await openCommandStore(config.database, log, { name: 'seed', creates: true, stderr })
      stop.started()
      let added = 0
      try {
        for (let start = 0; start < count && stop.stopped() === undefined; start += BATCH) {
          const size = Math.min(BATCH, count - start)
          // Creates issued together are committed together by the store: one transaction per batch.
          const created = await Promise.allSettled(
            Array.from({ length: size }, (_, i) => store.createPet({ pet: demoPet(start + i) })),
          )
          added += created.filter((result) => result.status === 'fulfilled').length
          const failed = created.find((result) => result.status === 'rejected')
          if (failed !== undefined) throw failed.reason
        }
        // Stopped during the last batch, it has added them all: said as any whole run is.
        const signal = stop.stopped()
        if (signal !== undefined && added < count) {
          stderr.write(`petstore seed: ${partLine(added, count, `stopped by ${signal}`)}\n`)
          return signalExitCode(signal)
        }
        stdout.write(`added ${counted(count, 'pet')}\n`)
        return 0
      } catch (error) {
        // Run again as it was, it would add the whole --count again: the line says how many are there.
        if (added === 0) throw error
        throw new CommandError(partLine(added, count, failureLine(error)))
      } finally {
        await store.close()
      }
    } finally {
      stop.release()
    }
  },
}
