import { AsyncLocalStorage } from 'node:async_hooks'
import type { IncomingMessage } from 'node:http'
import type { FastifyRequest } from 'fastify'
import { containsApiKey } from '../log/key-masking.ts'
import { randomRequestId } from './request-id.ts'

// A client's own request id is kept if it is short and plain; anything else is replaced, never logged as is.
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

// The id of the request on whose behalf the code now running was started, timers and promises included.
const requestContext = new AsyncLocalStorage<string>()
// Each request's id once made, kept on the request: an answer made below the framework (a slow body's
// 408) names it too. A property, not a WeakMap: an entry per request weighed on every collection.
const REQUEST_ID = Symbol('petstore.requestId')

/**
 * Fastify's `genReqId`: the client's `X-Request-Id` when it is acceptable, else a new UUID. A key is made
 * of the same characters, so an id holding one is replaced too (it would be echoed and logged). The id
 * becomes the request context of everything this request starts (Fastify calls this as the request
 * arrives), so a failure outside the request's own promise chain can still name it.
 */
export function requestIdOf(request: IncomingMessage & { [REQUEST_ID]?: string }): string {
  const known = request[REQUEST_ID]
  if (known !== undefined) return known
  const given = request.headers['x-request-id']
  const id =
    typeof given === 'string' && CLIENT_REQUEST_ID.test(given) && !containsApiKey(given)
      ? given
      : randomRequestId()
  request[REQUEST_ID] = id
  requestContext.enterWith(id)
  return id
}

/** The id of the request the running code works for, if it works for one. */
export function currentRequestId(): string | undefined {
  return requestContext.getStore()
}

/** The operation a request reached: its operationId, or the route, or "unknown" for unmatched paths. */
export function operationOf(request: FastifyRequest): string {
  // Read once: Fastify builds a new routeOptions object on every read.
  const { schema, url } = request.routeOptions
  return (schema as { operationId?: string } | undefined)?.operationId ?? url ?? 'unknown'
}
