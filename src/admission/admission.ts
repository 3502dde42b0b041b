import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { awaitsInvitation } from '../http/request-head.ts'
import type { DeprecatedCallCounter } from '../pets/deprecated-call-counter.ts'
import type { DeprecationPolicy } from '../pets/get-pet-deprecation.ts'
import type { KeyIdentity } from '../store/store.ts'
import type { BearerCheck } from './bearer-auth.ts'
import { announceDeprecation } from './deprecation-notice.ts'
import type { RateLimitHook } from './rate-limit/rate-limit.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key that authenticated this request, set by the operation's admission; null until then. */
    apiKey: KeyIdentity | null
  }
}

/** Gives every request its `apiKey`, null until admitted: on the root app, so all requests share one shape. */
export function decorateAdmittedKey(app: FastifyInstance): void {
  app.decorateRequest('apiKey', null)
}

/** The name of the key a request was admitted with, for its access line; undefined when none was. */
export function admittedKeyName(request: FastifyRequest): string | undefined {
  return request.apiKey?.name
}

export interface AdmissionOptions {
  checkBearer: BearerCheck
  /** Counts each authenticated request against its key's limit; none when rate limiting is off. */
  limitRate?: RateLimitHook
  /** For a deprecated operation: its schedule, and the counter its calls are counted in, per key. */
  deprecation?: { policy: DeprecationPolicy; now: () => number; calls: DeprecatedCallCounter }
}

/**
 * `Expect: 100-continue` asks whether the body should be sent. Node would say yes to everyone at once; an
 * admitted request is told so when its body is about to be read (after the size and type checks), and
 * one refused before that never is: the refusal is sent and the connection closed instead.
 */
function inviteBodyWhenRead(request: FastifyRequest, reply: FastifyReply): void {
  if (!awaitsInvitation(request.raw)) return
  request.raw.once('resume', () => {
    if (!reply.raw.headersSent) reply.raw.writeContinue()
  })
}

export type AdmissionHook = (
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
) => void

/**
 * The one onRequest hook of each operation, before the body is read: deprecation notice, bearer key,
 * deprecated-call count, `100 Continue`, rate limit. One callback hook, no promise while the key's lookup is
 * cached (docs/decisions.md, "One admission hook per operation").
 */
export function admission({ checkBearer, limitRate, deprecation }: AdmissionOptions): AdmissionHook {
  const markDeprecated = deprecation && announceDeprecation(deprecation.policy, deprecation.now)

  function admitKey(
    checked: KeyIdentity | Error,
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void {
    if (checked instanceof Error) {
      done(checked)
      return
    }
    request.apiKey = checked
    // Counted once the key is known, whatever comes next (a 429, a 400): a refused call to a deprecated
    // operation still shows the key's owner has code that makes it.
    deprecation?.calls.count(checked)
    if (request.headers.expect !== undefined) inviteBodyWhenRead(request, reply)
    if (limitRate === undefined) done()
    else limitRate(request, reply, done)
  }

  return function admit(request, reply, done) {
    const gone = markDeprecated?.(reply)
    if (gone !== undefined) {
      done(gone)
      return
    }
    const checked = checkBearer(request)
    if (checked instanceof Promise) {
      // Out of Fastify's hook runner here, so a failure (a store error, or a throw while admitting) must be
      // handed to `done`, never left as an unhandled rejection.
      checked
        .then((outcome) => admitKey(outcome, request, reply, done))
        .catch((error: unknown) => done(error instanceof Error ? error : new Error(String(error))))
      return
    }
    admitKey(checked, request, reply, done)
  }
}
