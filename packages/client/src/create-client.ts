import type { DeprecationListener } from './deprecation-notice.ts'
import { hasExactJson, UNSUPPORTED_ENGINE } from './exact-json.ts'
import { linkOf } from './link-header.ts'
import type { components, operations } from './openapi-types.ts'
import { PetStoreError } from './pet-store-error.ts'
import { type CallOptions, type Fetch, send, type Transport } from './send.ts'

export type { CallOptions, Fetch }

/**
 * `T` with each optional property also taking `undefined`, which is left out when sent: a caller compiling
 * with `exactOptionalPropertyTypes` may pass on a value that may be missing.
 */
type MayBeUndefined<T> = { [K in keyof T]: Partial<Pick<T, K>> extends Pick<T, K> ? T[K] | undefined : T[K] }

export type Pet = components['schemas']['Pet']
export type NewPet = MayBeUndefined<components['schemas']['NewPet']>
export type PetStatus = components['schemas']['PetStatus']
/** `limit` (1–100, default 20), `status`, and the opaque `cursor` of a next page. */
export type ListPetsQuery = MayBeUndefined<NonNullable<operations['listPets']['parameters']['query']>>

export interface PetPage {
  /** At most `limit` pets, in ascending id order. */
  pets: Pet[]
  /** The query of the next page, from the `Link: <…>; rel="next"` header; undefined on the last page. */
  next: ListPetsQuery | undefined
}

export interface ClientOptions {
  /** The deployment's base URL, ending in `/v1`, e.g. `http://localhost:8080/v1`. */
  baseUrl: string
  /** An API key (`psk_…`), sent as `Authorization: Bearer <key>` on every call. */
  apiKey: string
  /**
   * Used instead of the global fetch (for a proxy agent, retries or tests): called as `fetch(url, init)`,
   * so a wrapper may call it again with the same arguments to retry.
   */
  fetch?: Fetch | undefined
  /** How long a call may take, answer included, before it is aborted (a `TimeoutError`); 0: no limit. */
  timeoutMs?: number | undefined
  /**
   * Called when an answer announces that its operation is deprecated (getPet's do, errors included),
   * before the call returns or throws: to log it, count it, or alert well before the `sunset`. An async
   * listener is awaited; what it throws or rejects with, the call throws.
   */
  onDeprecation?: DeprecationListener | undefined
}

/** A call's time limit unless `timeoutMs` says otherwise: far above any answer of a healthy service. */
export const DEFAULT_TIMEOUT_MS = 30_000
// The longest a timer can wait (2^31 − 1 ms, about 24.8 days): beyond it Node fires at once.
const MAX_TIMEOUT_MS = 2_147_483_647

/**
 * The three operations; every int64 is an exact bigint. An answer other than success throws a
 * `PetStoreError`; a network failure throws what `fetch` throws.
 */
export interface PetStoreClient {
  /** One page of pets: `next` is the query of the following page, if there is one. */
  listPets(query?: ListPetsQuery, options?: CallOptions): Promise<PetPage>
  /** Every pet (with `status`, if given), in id order, following the next links page after page. */
  listAllPets(
    query?: Omit<ListPetsQuery, 'cursor'>,
    options?: CallOptions,
  ): AsyncGenerator<Pet, void, undefined>
  /**
   * Adds a pet and returns it with its new id. With an `idempotencyKey` (1 to 255 printable ASCII
   * characters, sent quoted when it holds a space or opens with `"`), a retry of the same pet (within
   * 24 hours) returns the pet the first call created instead of creating another. A `Pet` (with its
   * `id`) is refused by the type: the service would refuse it with 400.
   */
  createPet(
    pet: NewPet & { id?: never },
    options?: CallOptions & { idempotencyKey?: string | undefined },
  ): Promise<Pet>
  /**
   * One pet by id.
   * @deprecated Removed on 5 December 2030 (`Sunset: Thu, 05 Dec 2030 00:00:00 GMT`): use
   * {@link PetStoreClient.listPets} or {@link PetStoreClient.listAllPets} with a `status` filter.
   */
  getPet(id: bigint, options?: CallOptions): Promise<Pet>
}

/**
 * A typed client for the Pet Store API, built on the types generated from its OpenAPI document. Throws at
 * once, with one sentence, on an engine that cannot keep int64 values exact (Node.js before 21, for one)
 * or join two abort signals.
 */
export function createClient(options: ClientOptions): PetStoreClient {
  // AbortSignal.any joins a call's signal and its timeout; Chrome had exact JSON two releases before it.
  const canJoinSignals = typeof AbortSignal === 'function' && typeof AbortSignal.any === 'function'
  if (!hasExactJson() || !canJoinSignals) throw new TypeError(UNSUPPORTED_ENGINE)
  // White space around it is dropped, as a header value's is (a key read from a file keeps its newline).
  const apiKey =
    typeof options.apiKey === 'string' ? options.apiKey.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, '') : ''
  // Checked here, without echoing it: fetch's own refusal of a header value quotes the key.
  if (!/^[\x21-\x7e]+$/.test(apiKey)) {
    throw new TypeError(
      'apiKey must be printable ASCII (psk_ and 43 characters): it is empty or holds a character a header cannot carry',
    )
  }
  // Checked here: a URL without its scheme, or with a query, failed only at the first call, as a network
  // error or a 404 for a path nobody asked for.
  const given = String(options.baseUrl)
  const parsed = urlOrNothing(given)
  if ((parsed?.protocol !== 'http:' && parsed?.protocol !== 'https:') || /[?#]/.test(given)) {
    throw new TypeError(
      'baseUrl must be an http:// or https:// URL with no query or fragment, the paths following it, e.g. http://localhost:8080/v1',
    )
  }
  // Refused here, without echoing them: fetch refuses every such URL, quoting it, password and all.
  if (parsed.username !== '' || parsed.password !== '') {
    throw new TypeError('baseUrl must not hold a user name or password: the API key is the credential')
  }
  // Calls append /pets: from a baseUrl naming the collection, listPets would ask for /pets/pets and be
  // answered 400 for a petId nobody gave.
  if (/\/pets\/*$/i.test(parsed.pathname)) {
    throw new TypeError(
      "baseUrl names the pets collection: give the API's root, e.g. http://localhost:8080/v1",
    )
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  if (!Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > MAX_TIMEOUT_MS)
    throw new TypeError(`timeoutMs must be a whole number of milliseconds from 0 to ${MAX_TIMEOUT_MS}`)
  const transport: Transport = {
    // The URL checked, not the text given: white space around it (a line read from a file) would be sent
    // as part of every path.
    baseUrl: parsed.href,
    apiKey,
    fetch: options.fetch ?? ((url, init) => fetch(url, init)),
    timeoutMs,
    onDeprecation: options.onDeprecation,
  }

  async function listPage(query: ListPetsQuery, call: CallOptions) {
    const { body, response } = await send(
      transport,
      call,
      { name: 'listPets', answers: 'pets' },
      'get',
      '/pets',
      { query },
    )
    return { page: { pets: body as Pet[], next: nextQueryOf(response) }, response }
  }

  return {
    listPets: async (query = {}, call = {}) => (await listPage(query, call)).page,
    async *listAllPets(query = {}, call = {}) {
      let next: ListPetsQuery | undefined = query
      // Pages come in ascending id order: one that does not start past the last pet handed out (a next
      // link leading back, a proxy's cache) would be handed out again, and loop for ever.
      let lastId: bigint | undefined
      while (next !== undefined) {
        const { page, response }: { page: PetPage; response: Response } = await listPage(next, call)
        const firstId = page.pets[0]?.id
        if (firstId !== undefined && lastId !== undefined && firstId <= lastId) throw repeatedPage(response)
        // The service links on only from a page that holds pets: empty pages linking on would never end.
        if (firstId === undefined && page.next !== undefined) throw repeatedPage(response)
        lastId = page.pets.at(-1)?.id ?? lastId
        for (const pet of page.pets) {
          // Aborted between two pets of a page: no more of it is handed out.
          call.signal?.throwIfAborted()
          yield pet
        }
        next = page.next
      }
    },
    async createPet(pet, { idempotencyKey, ...call } = {}) {
      refuseNumber('categoryId', (pet as { categoryId?: unknown } | null)?.categoryId)
      // Checked here, without echoing it: fetch's own refusal is a TypeError about a ByteString. The API's
      // other rules (its length, quoting) are the service's to say, as 400 invalid_idempotency_key.
      // From plain JavaScript, `null` (a nullable column) would be sent as the key "null", shared by all.
      if (idempotencyKey !== undefined && typeof idempotencyKey !== 'string') {
        throw new TypeError(`idempotencyKey must be a string (or left out), not ${typeof idempotencyKey}`)
      }
      if (idempotencyKey !== undefined && !/^[\x20-\x7e]*$/.test(idempotencyKey)) {
        throw new TypeError(
          'idempotencyKey must be printable ASCII (1 to 255 characters): it holds a character a header cannot carry',
        )
      }
      const header = idempotencyKey === undefined ? {} : { 'idempotency-key': headerForm(idempotencyKey) }
      return (
        await send(transport, call, { name: 'createPet', answers: 'pet' }, 'post', '/pets', { header }, pet)
      ).body as Pet
    },
    async getPet(id, call = {}) {
      refuseNumber('id', id)
      return (
        await send(transport, call, { name: 'getPet', answers: 'pet' }, 'get', '/pets/{petId}', {
          path: { petId: id },
        })
      ).body as Pet
    },
  }
}

/**
 * The header's form of an idempotency key: bare when the service reads it as it is (visible ASCII, not
 * opening with a quote), else quoted, `"` and `\` escaped. Sent bare, a space would be refused (or, first
 * or last, trimmed by fetch) and `"k"` would be read as `k`: each key is then itself, not another.
 */
function headerForm(key: string): string {
  return /^[!#-~][!-~]*$/.test(key) ? key : `"${key.replace(/["\\]/g, '\\$&')}"`
}

/**
 * A plain JavaScript caller's number where an int64 goes: refused before anything is sent, as it may
 * already have been rounded (the literal 9007199254740993 is the number 9007199254740992), which would
 * create a pet in another category or read another pet, without a word.
 */
function refuseNumber(name: string, value: unknown): void {
  if (typeof value !== 'number') return
  throw new TypeError(
    `${name} must be a bigint (e.g. 9007199254740993n, or BigInt of its text): a number above 2^53 is already rounded, so none is taken`,
  )
}

function repeatedPage(response: Response): PetStoreError {
  const message = 'the next link leads back to pets already listed, or on from a page of none: paging stopped'
  return new PetStoreError({ code: 'unexpected_response', message, status: response.status }, response)
}

/**
 * The next page's query, taken from the `rel="next"` link. Its query is sent to the client's own base URL
 * rather than to the link's origin: the key then never goes anywhere but `baseUrl`, and paging still works
 * when the service's PUBLIC_BASE_URL is not the address this client reaches it by.
 */
function nextQueryOf(response: Response): ListPetsQuery | undefined {
  let link: URL | undefined
  try {
    link = linkOf(response, 'next')
  } catch {
    // A target no URL can be made of (`<http://[>`): not the service's link.
    throw PetStoreError.from(`a next link that is no URL: ${response.headers.get('link')}`, response)
  }
  if (link === undefined) return undefined
  const params = link.searchParams
  const query: ListPetsQuery = {}
  const limit = params.get('limit')
  const status = params.get('status')
  const cursor = params.get('cursor')
  if (limit !== null) query.limit = Number(limit)
  if (status !== null) query.status = status as PetStatus
  if (cursor !== null) query.cursor = cursor
  return query
}

// Not URL.canParse: Chrome has it from 120 only, four releases after everything else the client needs.
function urlOrNothing(text: string): URL | undefined {
  try {
    return new URL(text)
  } catch {
    return undefined
  }
}
