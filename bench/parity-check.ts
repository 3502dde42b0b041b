import { HOP_HEADERS } from './baseline-fixture.ts'
import type { LoadRequest, Scenario } from './scenarios.ts'

interface Answer {
  status: number
  body: string
  /** The names of its headers, but those each server sets per connection or moment (baseline-fixture.ts). */
  headerNames: string
}

async function send(origin: string, request: LoadRequest): Promise<Answer> {
  const response = await fetch(`${origin}${request.path}`, {
    method: request.method,
    headers: request.headers,
    body: request.body ?? null,
  })
  const names = [...response.headers.keys()].filter((name) => !HOP_HEADERS.has(name))
  return { status: response.status, body: await response.text(), headerNames: names.sort().join(' ') }
}

/** The id is the only part of a created pet that may differ between the two servers. */
const withoutId = (body: string) => body.replace(/^\{"id":-?\d+,/, '{')

/**
 * Sends each distinct request of every scenario to both servers once and checks they answer alike, so a
 * ratio never compares the service with a baseline that does something else (or fails fast).
 */
export async function checkParity(serviceOrigin: string, baselineOrigin: string, scenarios: Scenario[]) {
  const seen = new Set<string>()
  for (const scenario of scenarios) {
    for (const request of scenario.requests) {
      const id = `${request.method} ${request.path} ${request.headers.authorization}`
      if (seen.has(id)) continue
      seen.add(id)
      const [service, baseline] = [await send(serviceOrigin, request), await send(baselineOrigin, request)]
      const comparable = request.method === 'POST' ? withoutId : (body: string) => body
      if (
        !scenario.expectedStatuses.includes(service.status) ||
        service.status !== baseline.status ||
        comparable(service.body) !== comparable(baseline.body) ||
        service.headerNames !== baseline.headerNames
      ) {
        throw new Error(
          `${scenario.name}: ${request.method} ${request.path} differs:\n` +
            `  service  ${service.status} ${service.body.slice(0, 300)}\n    ${service.headerNames}\n` +
            `  baseline ${baseline.status} ${baseline.body.slice(0, 300)}\n    ${baseline.headerNames}`,
        )
      }
    }
  }
}
