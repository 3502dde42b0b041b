import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import type { Cleanup } from './cleanup.ts'
import { checkedFetch, conformanceAt } from './conformance-fetch.ts'

/** One request of a load run, as the client saw it. */
export interface Answer {
  method: string
  path: string
  /** 0 when no answer came at all (the connection failed, or the client gave up after 30 s). */
  status: number
  text: string
  retryAfter: string | null
  startedAt: number
  endedAt: number
  ms: number
}

export async function timedCall(
  origin: string,
  key: string,
  method: string,
  path: string,
  body?: string,
): Promise<Answer> {
  const startedAt = performance.now()
  const answer = { method, path, status: 0, text: '', retryAfter: null as string | null, startedAt }
  try {
    const response = await checkedFetch(origin, path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body,
      signal: AbortSignal.timeout(30_000),
    })
    Object.assign(answer, {
      status: response.status,
      text: await response.text(),
      retryAfter: response.headers.get('retry-after'),
    })
  } catch (error) {
    answer.text = String(error)
  }
  const endedAt = performance.now()
  return { ...answer, endedAt, ms: endedAt - startedAt }
}

/**
 * Open-loop load: every `everyMs` a create, a list and, with `getPetId`, a getPet of that pet, each sent
 * on time whether or not the earlier ones were answered, so requests arrive all along an outage, not only
 * in waves. It is stopped after the test `t` if the test has not stopped it.
 */
export async function startLoad(
  t: Cleanup,
  origin: string,
  key: string,
  { everyMs = 100, getPetId }: { everyMs?: number; getPetId?: string } = {},
) {
  await conformanceAt(origin)
  const pending: Array<Promise<Answer>> = []
  let running = true
  let sequence = 0
  const every = async (ms: number, send: () => Promise<Answer>) => {
    while (running) {
      pending.push(send())
      await sleep(ms)
    }
  }
  const loops = [
    every(everyMs, () =>
      timedCall(origin, key, 'POST', '/v1/pets', `{"name":"load-${sequence++}","categoryId":7}`),
    ),
    every(everyMs, () => timedCall(origin, key, 'GET', '/v1/pets?limit=5')),
    ...(getPetId ? [every(everyMs, () => timedCall(origin, key, 'GET', `/v1/pets/${getPetId}`))] : []),
  ]
  /** Stops sending; resolves with every answer once all have come (each gives up after 30 s). */
  const stop = async (): Promise<Answer[]> => {
    running = false
    await Promise.all(loops)
    return Promise.all(pending)
  }
  t.after(stop)
  return { stop }
}

/** Load for `warmMs`, then `fault()`, then load for `lastingMs` more: every answer, and when the fault began. */
export async function loadAcross(
  t: Cleanup,
  origin: string,
  key: string,
  fault: () => void,
  lastingMs: number,
  warmMs = 300,
) {
  const load = await startLoad(t, origin, key)
  await sleep(warmMs)
  const faultAt = performance.now()
  fault()
  await sleep(lastingMs)
  return { answers: await load.stop(), faultAt }
}

/**
 * Every request still unanswered at `since` (or sent after it) was answered within `boundMs` (plus
 * `slackMs` for a loaded machine): with its success status if it got through before the fault, or 503
 * `service_unavailable` with Retry-After; and both creates and reads were among the 503s. Returns a
 * summary for the test's diagnostics.
 */
export function assertAnsweredWithin(
  answers: readonly Answer[],
  since: number,
  boundMs: number,
  slackMs: number,
): string {
  const unavailable = { GET: 0, POST: 0 } as Record<string, number>
  const during = answers.filter((answer) => answer.endedAt >= since)
  for (const answer of during) {
    const label = `${answer.method} ${answer.path} sent at ${Math.round(answer.startedAt - since)} ms`
    assert.ok(
      answer.ms <= boundMs + slackMs,
      `${label}: answered after ${Math.round(answer.ms)} ms, over the bound of ${boundMs} ms`,
    )
    if (answer.status === 503) {
      assert.equal(JSON.parse(answer.text).code, 'service_unavailable', label)
      assert.ok(answer.retryAfter, `${label}: a 503 without Retry-After`)
      unavailable[answer.method] = (unavailable[answer.method] ?? 0) + 1
    } else {
      assert.ok([200, 201].includes(answer.status), `${label}: ${answer.status} ${answer.text}`)
    }
  }
  const counts = JSON.stringify(unavailable)
  assert.ok(unavailable.POST && unavailable.GET, `503s for both creates and reads: ${counts}`)
  const slowest = Math.round(Math.max(0, ...during.map((answer) => answer.ms)))
  return `${counts} answered 503, slowest ${slowest} ms (bound ${boundMs} ms)`
}

/** The pets the service acknowledged (201) in these answers: id as exact text, name and category. */
export function acknowledgedPets(answers: readonly Answer[]) {
  return answers
    .filter((answer) => answer.method === 'POST' && answer.status === 201)
    .map((answer) => {
      const pet = JSON.parse(answer.text) as { name: string; categoryId: number }
      return {
        id: /"id":(\d+)/.exec(answer.text)?.[1] ?? '',
        name: pet.name,
        category_id: `${pet.categoryId}`,
      }
    })
}

/** The rows of these pets as the database itself holds them, by id (as text, so nothing is rounded). */
export async function petsInDatabase(url: string, ids: readonly string[]) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query<{ id: string; name: string; category_id: string }>(
      'SELECT id::text, name, category_id::text FROM pets WHERE id = ANY($1::bigint[])',
      [ids],
    )
    return new Map(rows.map((row) => [row.id, row]))
  } finally {
    await client.end()
  }
}

/** Every acknowledged pet is in the database, exactly as acknowledged. */
export async function assertAllStored(url: string, answers: readonly Answer[]): Promise<number> {
  const acknowledged = acknowledgedPets(answers)
  const stored = await petsInDatabase(
    url,
    acknowledged.map((pet) => pet.id),
  )
  for (const pet of acknowledged) {
    assert.deepEqual(stored.get(pet.id), pet, `acknowledged create ${pet.id} is in the database`)
  }
  return acknowledged.length
}

/** Creates until one is answered 201 (the service recovered by itself); fails after `timeoutMs`. */
export async function awaitRecovery(origin: string, key: string, timeoutMs = 15_000): Promise<Answer> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const answer = await timedCall(origin, key, 'POST', '/v1/pets', '{"name":"after","categoryId":7}')
    if (answer.status === 201) return answer
    if (performance.now() > deadline) assert.fail(`no 201 within ${timeoutMs} ms: ${answer.text}`)
    await sleep(200)
  }
}
