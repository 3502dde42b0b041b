import { setTimeout as sleep } from 'node:timers/promises'

/**
 * A Jepsen-style set test: writers add pets with unique names while something breaks underneath, and
 * every request is recorded as ok (201 received), failed (a 4xx: certainly not created) or unknown (no
 * answer, or a 5xx: the create may or may not have committed). At the end the catalogue must hold every
 * ok pet exactly as acknowledged, nothing that was never sent and nothing that was refused.
 */
export interface SetTestLog {
  /** name → the exact 201 body. */
  ok: Map<string, string>
  failed: Set<string>
  unknown: Set<string>
  /** Every name a request was sent for. */
  sent: Set<string>
}

export function newSetTestLog(): SetTestLog {
  return { ok: new Map(), failed: new Set(), unknown: new Set(), sent: new Set() }
}

export interface Writers {
  /** Stops the writers and waits for their last requests to settle. */
  stop(): Promise<void>
}

let sequence = 0

/**
 * `count` writers creating pets against whatever `origin()` says now (the service may be restarted on
 * another port). Requests time out after `timeoutMs` and count as unknown.
 */
export function startWriters(options: {
  count: number
  log: SetTestLog
  origin: () => string | undefined
  key: string
  timeoutMs?: number
}): Writers {
  const { log, key, timeoutMs = 5000 } = options
  let running = true
  const writer = async (writerId: number) => {
    while (running) {
      const origin = options.origin()
      if (origin === undefined) {
        await sleep(20)
        continue
      }
      const name = `w${writerId}-${sequence++}`
      // categoryId beyond 2^53 on purpose: a rounded value would show as a changed pet.
      const body = `{"name":"${name}","categoryId":${9007199254740993n + BigInt(sequence)},"status":"sold"}`
      log.sent.add(name)
      try {
        const response = await fetch(`${origin}/v1/pets`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body,
          signal: AbortSignal.timeout(timeoutMs),
        })
        const text = await response.text()
        if (response.status === 201) log.ok.set(name, text)
        else if (response.status < 500) log.failed.add(name)
        else log.unknown.add(name)
      } catch {
        log.unknown.add(name)
        await sleep(20)
      }
    }
  }
  const writers = Array.from({ length: options.count }, (_, i) => writer(i))
  return {
    async stop() {
      running = false
      await Promise.all(writers)
    },
  }
}

/** Every pet, read through the API's own paging (following `Link: <…>; rel="next"`), as raw JSON text. */
export async function walkCatalogue(origin: string, key: string): Promise<Map<string, string>> {
  const pets = new Map<string, string>()
  let url: string | undefined = `${origin}/v1/pets?limit=100`
  for (let pages = 0; url !== undefined; pages++) {
    if (pages === 10_000) throw new Error('walk: next links did not end within 10,000 pages')
    const response: Response = await fetch(url, { headers: { authorization: `Bearer ${key}` } })
    if (response.status !== 200) throw new Error(`walk: ${response.status} ${await response.text()}`)
    const text = await response.text()
    // Each pet's own JSON text, so int64 values are compared exactly (JSON.parse would round them).
    for (const match of text.matchAll(/\{[^{}]*\}/g)) {
      const name = /"name":"([^"]*)"/.exec(match[0])?.[1]
      if (name !== undefined) pets.set(name, match[0])
    }
    const next = /<([^>]+)>; rel="next"/.exec(response.headers.get('link') ?? '')?.[1]
    url = next === undefined ? undefined : new URL(next, url).href
  }
  return pets
}

export interface SetTestVerdict {
  /** Acknowledged, but missing or different. */
  lost: string[]
  /** Present, but never sent. */
  unexpected: string[]
  /** Refused with a 4xx, but present anyway. */
  refusedButStored: string[]
  /** Unknown outcome: how many turned out stored. */
  unknownStored: number
  unknownAbsent: number
}

/** Compares the log with the catalogue (name → stored JSON text). */
export function verdict(log: SetTestLog, stored: Map<string, string>): SetTestVerdict {
  const lost = [...log.ok].filter(([name, body]) => stored.get(name) !== body).map(([name]) => name)
  const unexpected = [...stored.keys()].filter((name) => !log.sent.has(name))
  const refusedButStored = [...log.failed].filter((name) => stored.has(name))
  const unknownStored = [...log.unknown].filter((name) => stored.has(name)).length
  return {
    lost,
    unexpected,
    refusedButStored,
    unknownStored,
    unknownAbsent: log.unknown.size - unknownStored,
  }
}

export function describeVerdict(log: SetTestLog, result: SetTestVerdict): string {
  return (
    `sent ${log.sent.size}, ok ${log.ok.size}, failed ${log.failed.size}, unknown ${log.unknown.size} ` +
    `(${result.unknownStored} stored, ${result.unknownAbsent} not); lost ${result.lost.length}, ` +
    `unexpected ${result.unexpected.length}, refused but stored ${result.refusedButStored.length}`
  )
}

/** How many kills a crash test makes: 5 by default (CI), more with `CRASH_KILLS` for a long run. */
export function crashKills(): number {
  const kills = Number(process.env.CRASH_KILLS ?? 5)
  if (!Number.isInteger(kills) || kills < 1) throw new Error(`CRASH_KILLS must be a positive integer`)
  return kills
}
