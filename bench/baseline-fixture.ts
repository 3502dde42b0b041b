import { NEW_PET_BODY, readPaths, type ScenarioContext } from './scenarios.ts'

/** One response as the service sent it: what the baseline replays byte for byte. */
export interface RecordedResponse {
  status: number
  headers: Record<string, string>
  bodyBase64: string
}

export interface BaselineFixture {
  /** By request URL (path and query), as the baseline sees it in `request.url`. */
  responses: Record<string, RecordedResponse>
  unauthorized: RecordedResponse
  /** A create's 201, for its headers: the baselines send them with their own Location. */
  created: RecordedResponse
  /** The id the baseline's first create gets. */
  nextId: number
}

// Per connection or per moment, not part of the representation: the baseline's own server sets them.
export const HOP_HEADERS = new Set([
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
])

async function record(
  url: string,
  apiKey: string,
  expectedStatus: number,
  init: RequestInit = {},
): Promise<RecordedResponse> {
  const response = await fetch(url, {
    ...init,
    headers: { ...init.headers, authorization: `Bearer ${apiKey}` },
  })
  const body = Buffer.from(await response.arrayBuffer())
  if (response.status !== expectedStatus) {
    throw new Error(`${url}: expected ${expectedStatus}, got ${response.status}: ${body.toString()}`)
  }
  const headers: Record<string, string> = {}
  for (const [name, value] of response.headers) if (!HOP_HEADERS.has(name)) headers[name] = value
  return { status: response.status, headers, bodyBase64: body.toString('base64') }
}

/**
 * Fetches, once, every response the read scenarios ask for, right after seeding. Creates only append
 * pets with higher ids, so these first pages and pets stay the service's answer for the whole run.
 */
export async function recordFixture(
  serviceOrigin: string,
  context: ScenarioContext,
  pets: number,
): Promise<BaselineFixture> {
  const responses: Record<string, RecordedResponse> = {}
  for (const path of readPaths(context)) {
    responses[path] = await record(`${serviceOrigin}${path}`, context.apiKey, 200)
  }
  const unauthorized = await record(`${serviceOrigin}/v1/pets`, context.wrongKey, 401)
  // After the reads: the pet it makes, the last, is on none of their pages.
  const created = await record(`${serviceOrigin}/v1/pets`, context.apiKey, 201, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: NEW_PET_BODY,
  })
  return { responses, unauthorized, created, nextId: pets + 2 }
}
