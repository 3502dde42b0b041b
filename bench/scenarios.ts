export const SCENARIO_NAMES = [
  'list20',
  'list100',
  'list-status',
  'get',
  'create',
  'create-keyed',
  'unauthorized',
  'mixed',
] as const

export type ScenarioName = (typeof SCENARIO_NAMES)[number]

/** The scenarios that only read: their latency targets, and their latency at a fixed rate. */
export const READ_SCENARIOS: ScenarioName[] = ['list20', 'list100', 'list-status', 'get', 'unauthorized']

/** One request as the load generator sends it (autocannon's request shape). */
export interface LoadRequest {
  method: 'GET' | 'POST'
  path: string
  headers: Record<string, string>
  body?: string
  /** Sent with an Idempotency-Key of its own each time (the load generator makes them, never repeated). */
  freshIdempotencyKey?: true
}

export interface Scenario {
  name: ScenarioName
  /** Cycled through by every connection, in order. */
  requests: LoadRequest[]
  /** Any other status counts as an error. */
  expectedStatuses: number[]
}

export interface ScenarioContext {
  apiKey: string
  /** Well formed but unknown to the service, so it reaches the key lookup rather than the format check. */
  wrongKey: string
  /** Existing pet ids, spread over the seeded range. */
  petIds: bigint[]
}

const LIST20_PATH = '/v1/pets'
const LIST100_PATH = '/v1/pets?limit=100'
const LIST_STATUS_PATH = '/v1/pets?status=available&limit=20'
export const NEW_PET_BODY = JSON.stringify({ name: 'Bench pet', categoryId: 3, status: 'available' })

/** Ids 1…pets as the seed of a fresh database gives them: ten, spread evenly, so reads touch the whole index. */
export function spreadPetIds(pets: number): bigint[] {
  const ids = new Set<bigint>()
  for (let k = 0; k < 10; k++) ids.add(BigInt(1 + Math.floor((k * pets) / 10)))
  return [...ids]
}

export function petPath(id: bigint): string {
  return `/v1/pets/${id}`
}

/** Every GET path (with the valid key) any scenario sends: what the baseline must be able to answer. */
export function readPaths(context: ScenarioContext): string[] {
  return [LIST20_PATH, LIST100_PATH, LIST_STATUS_PATH, ...context.petIds.map(petPath)]
}

/**
 * Sent with every request, as a real caller's requests carry one (Node's fetch, under the typed client,
 * sends `node`): the service's request line then has the user agent a deployment's lines have.
 */
export const USER_AGENT = 'node'

export function buildScenario(name: ScenarioName, context: ScenarioContext): Scenario {
  const auth = { 'user-agent': USER_AGENT, authorization: `Bearer ${context.apiKey}` }
  const get = (path: string): LoadRequest => ({ method: 'GET', path, headers: auth })
  const create: LoadRequest = {
    method: 'POST',
    path: '/v1/pets',
    headers: { ...auth, 'content-type': 'application/json' },
    body: NEW_PET_BODY,
  }
  const gets = context.petIds.map((id) => get(petPath(id)))
  switch (name) {
    case 'list20':
      return { name, requests: [get(LIST20_PATH)], expectedStatuses: [200] }
    case 'list100':
      return { name, requests: [get(LIST100_PATH)], expectedStatuses: [200] }
    case 'list-status':
      return { name, requests: [get(LIST_STATUS_PATH)], expectedStatuses: [200] }
    case 'get':
      return { name, requests: gets, expectedStatuses: [200] }
    case 'create':
      return { name, requests: [create], expectedStatuses: [201] }
    case 'create-keyed':
      return { name, requests: [{ ...create, freshIdempotencyKey: true }], expectedStatuses: [201] }
    case 'unauthorized': {
      const request: LoadRequest = {
        method: 'GET',
        path: LIST20_PATH,
        headers: { 'user-agent': USER_AGENT, authorization: `Bearer ${context.wrongKey}` },
      }
      return { name, requests: [request], expectedStatuses: [401] }
    }
    case 'mixed': {
      // Per cycle of five: two lists, two gets (on different ids), one create — 80 % reads, 20 % writes.
      const requests: LoadRequest[] = []
      for (let i = 0; i < gets.length; i += 2) {
        requests.push(get(LIST20_PATH), gets[i] as LoadRequest, get(LIST20_PATH))
        requests.push(gets[i + 1] ?? (gets[0] as LoadRequest), create)
      }
      return { name, requests, expectedStatuses: [200, 201] }
    }
  }
}
