import { type DeprecationListener, deprecationNoticeOf } from './deprecation-notice.ts'
import { parseExactJson, stringifyExactJson } from './exact-json.ts'
import type { paths } from './openapi-types.ts'
import { isPet } from './pet-shape.ts'
import { PetStoreError } from './pet-store-error.ts'

type Method = 'get' | 'post'
/** The operation the OpenAPI document declares at this path and method (never when there is none). */
type OperationAt<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>
/** Its parameters, as generated: `query`, `header` and `path`, each typed or `never`. */
export type ParametersOf<P extends keyof paths, M extends Method> = OperationAt<P, M>['parameters']
type BodyOf<P extends keyof paths, M extends Method> =
  OperationAt<P, M> extends { requestBody: { content: { 'application/json': infer Body } } } ? Body : never

type Values = Record<string, string | number | bigint | undefined>

/** Sends one call: given a URL and what `fetch` takes with it, so a wrapper may send it again (retries). */
export type Fetch = (url: string, init: RequestInit) => Promise<Response>

/** Where and how calls go: the deployment's base URL, the key, the fetch that sends them, their timeout. */
export interface Transport {
  baseUrl: string
  apiKey: string
  fetch: Fetch
  /** 0: none. */
  timeoutMs: number
  onDeprecation: DeprecationListener | undefined
}

/** What every call may be given. */
export interface CallOptions {
  /** Cancels the call (its answer is then never read); with the client's timeout, whichever comes first. */
  signal?: AbortSignal | undefined
}

/** An operation's name (as a deprecation listener is told it) and what its success answers hold. */
export interface Operation {
  name: string
  answers: 'pet' | 'pets'
}

/**
 * Sends one operation and returns its parsed success body, or throws a {@link PetStoreError}. The path
 * and parameters are typed from the generated `paths`, so a call the document no longer allows fails the
 * type check.
 */
export async function send<P extends keyof paths, M extends Method>(
  transport: Transport,
  call: CallOptions,
  operation: Operation,
  method: M,
  path: P,
  parameters: ParametersOf<P, M>,
  body?: BodyOf<P, M>,
): Promise<{ body: unknown; response: Response }> {
  const { query, header, path: inPath } = parameters as { query?: Values; header?: Values; path?: Values }
  // A plain object, not Headers: a wrapper spreading `init.headers` into its own keeps every one.
  const headers: Record<string, string> = {
    authorization: `Bearer ${transport.apiKey}`,
    accept: 'application/json',
    // The service sends no compressed answer: a compressed one is a stranger's, and could unpack to gigabytes.
    'accept-encoding': 'identity',
    ...Object.fromEntries(definedEntries(header)),
  }
  if (body !== undefined) headers['content-type'] = 'application/json'
  const { signal, ended } = signalOf(call.signal, transport.timeoutMs)
  // The limit's timer ends with the call, however it ends: answered, refused, or thrown.
  try {
    const init: RequestInit = {
      method: method.toUpperCase(),
      headers,
      body: body === undefined ? null : stringifyExactJson(body),
      // The API never redirects: a redirect, which would send the call, body and all, somewhere else, is
      // answered as what it is (a 3xx, or a browser's opaque one: `unexpected_response`).
      redirect: 'manual',
      ...(signal === undefined ? {} : { signal }),
    }
    // A wrapper (retries) may wait past the limits before it settles, or never: the call ends at them.
    const response = (await untilAborted(
      () => transport.fetch(urlOf(transport.baseUrl, path, inPath, query), init),
      signal,
      transport.timeoutMs > 0,
      cancelBody,
    )) as Response
    // Told as the answer's head comes (its body may never come), before the call returns or throws; what
    // the listener throws, the call throws; a listener that never settles is cut by the call's limits.
    const listener = transport.onDeprecation
    const notice = listener && deprecationNoticeOf(operation.name, response)
    if (listener && notice) {
      await untilAborted(() => listener(notice), signal, transport.timeoutMs > 0).catch(
        async (error: unknown) => {
          await response.body?.cancel().catch(() => {})
          throw error
        },
      )
    }
    const text = await boundedText(response)
    if (!response.ok) throw PetStoreError.from(withBaseUrlHint(parsedOrText(text)), response)
    let parsed: unknown
    try {
      parsed = parseExactJson(text)
    } catch (error) {
      // A success status with a body that is not JSON came from something in between (a proxy's page), as
      // did one nested past the stack's depth (a RangeError).
      if (error instanceof SyntaxError || error instanceof RangeError)
        throw PetStoreError.from(text, response)
      throw error
    }
    // Anything else (`null`, a pet where a page is due, a pet without its id) would be handed on as what
    // the call's type promises.
    const fits = operation.answers === 'pets' ? Array.isArray(parsed) && parsed.every(isPet) : isPet(parsed)
    if (!fits) throw PetStoreError.from(text, response)
    return { body: parsed, response }
  } finally {
    ended()
  }
}

/**
 * What `run` settles with (a throw as a rejection), or the signal's reason once it aborts, whichever
 * comes first; a rejection of `run` after the signal won is handled, never left to the process, and a
 * value goes to `late`. `timed`: the signal holds the call's time limit.
 */
function untilAborted(
  run: () => unknown,
  signal: AbortSignal | undefined,
  timed: boolean,
  late: (value: unknown) => void = () => {},
): Promise<unknown> {
  const work = new Promise((resolve) => resolve(run()))
  if (signal === undefined) return work
  const dropped = () => void work.then(late, () => {})
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      dropped()
      reject(signal.reason)
      return
    }
    // The timeout's timer does not keep a process alive: with nothing else pending, a process waiting on
    // a listener that never settles would end there, the call neither answered nor failed. Without a
    // time limit, the caller's signal alone decides, and its own timer, if any, keeps the process.
    const pending = timed ? setInterval(() => {}, MAX_TIMER_MS) : undefined
    const settled = () => {
      clearInterval(pending)
      signal.removeEventListener('abort', abort)
    }
    const abort = () => {
      settled()
      dropped()
      reject(signal.reason)
    }
    signal.addEventListener('abort', abort, { once: true })
    work.then(resolve, reject).finally(settled)
  })
}

/** An answer that came after its call ended: its body is read no further, freeing its connection. */
function cancelBody(late: unknown): void {
  if (late instanceof Response) late.body?.cancel().catch(() => {})
}

// The longest a timer can wait (2^31 − 1 ms): the interval above is only held, never meant to fire.
const MAX_TIMER_MS = 2_147_483_647

// The most an answer may hold: a page of 100 pets at their longest is about 60 KB.
const MAX_ANSWER_BYTES = 1024 * 1024

/** The answer's text, refused past MAX_ANSWER_BYTES (a stranger's endless answer would fill memory). */
async function boundedText(response: Response): Promise<string> {
  if (response.body === null) return ''
  const decoder = new TextDecoder()
  // A reader, not `for await`: Safari's streams are not async iterable.
  const reader = response.body.getReader()
  let text = ''
  let bytes = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return text + decoder.decode()
    bytes += value.byteLength
    if (bytes > MAX_ANSWER_BYTES) {
      await reader.cancel().catch(() => {})
      const message = `HTTP ${response.status}: an answer longer than ${MAX_ANSWER_BYTES} bytes (read no further)`
      throw new PetStoreError({ code: 'unexpected_response', message, status: response.status }, response)
    }
    text += decoder.decode(value, { stream: true })
  }
}

/**
 * The caller's signal, the time limit's, or the first of both to abort, and the end of the limit's timer.
 * Not `AbortSignal.timeout`: its timer cannot be cleared, and lived on for `timeoutMs` after every call.
 */
function signalOf(
  signal: AbortSignal | undefined,
  timeoutMs: number,
): { signal: AbortSignal | undefined; ended: () => void } {
  // `null` too, as fetch takes it from plain JavaScript (the type says undefined).
  if (timeoutMs === 0) return { signal: signal ?? undefined, ended: () => {} }
  const limit = new AbortController()
  const timer = setTimeout(
    () => limit.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    timeoutMs,
  )
  // As `AbortSignal.timeout`'s, it keeps no process alive (untilAborted holds one while a listener runs).
  ;(timer as { unref?: () => void }).unref?.()
  return {
    signal: signal == null ? limit.signal : AbortSignal.any([signal, limit.signal]),
    ended: () => clearTimeout(timer),
  }
}

function urlOf(baseUrl: string, path: string, inPath: Values | undefined, query: Values | undefined): string {
  const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(inPath?.[name])))
  const search = new URLSearchParams(definedEntries(query)).toString()
  return `${baseUrl.replace(/\/+$/, '')}${filled}${search === '' ? '' : `?${search}`}`
}

function definedEntries(values: Values | undefined): [string, string][] {
  return Object.entries(values ?? {}).flatMap(([name, value]) =>
    value === undefined ? [] : [[name, String(value)] as [string, string]],
  )
}

function parsedOrText(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/**
 * The client asks only for the API's own paths: the service saying it has no operation at one means the
 * baseUrl is not the API's root (`http://host:8080` without `/v1`, most often), which the answer names.
 */
function withBaseUrlHint(body: unknown): unknown {
  if (typeof body !== 'object' || body === null) return body
  const { code, message } = body as { code?: unknown; message?: unknown }
  if (code !== 'route_not_found' || typeof message !== 'string') return body
  return { ...body, message: `${message}: is baseUrl the API's root, ending in /v1?` }
}
