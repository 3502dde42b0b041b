import assert from 'node:assert/strict'
import { generateApiKey, storedFormOf } from '../../src/auth/api-key.ts'
import type { Pet } from '../../src/schemas/pet.ts'
import { conformanceOf } from './api-client.ts'
import type { KnownCursor } from './fuzz-urls.ts'
import type { OpenApiConformance } from './openapi-conformance.ts'
import type { TestServer } from './test-server.ts'
import { sendWire, type WireRequest, type WireResponse } from './wire-client.ts'

/** A pet as the catalogue must hold it: what accepted creates returned, in id order. */
export interface ModelPet {
  id: bigint
  name: string
  categoryId: bigint
  status?: string
}

interface ReviverContext {
  source: string
}

/** JSON.parse keeping every integer exact (a bigint from its source text): int64 is compared on digits. */
// biome-ignore lint/suspicious/noExplicitAny: a parsed body of any shape, asserted on by the caller
export function parseExact(text: string): any {
  const reviver = (_key: string, value: unknown, context?: ReviverContext) =>
    typeof value === 'number' && context !== undefined && /^-?\d+$/.test(context.source)
      ? BigInt(context.source)
      : value
  return JSON.parse(text, reviver as (key: string, value: unknown) => unknown)
}

const modelOf = (pet: Pet | ModelPet): ModelPet => ({
  id: pet.id,
  name: pet.name,
  categoryId: pet.categoryId,
  ...(pet.status === undefined ? {} : { status: pet.status }),
})

// What an error body must never show: stack frames, source paths, modules, SQL or driver detail.
const LEAK = new RegExp(
  [
    /\n\s+at |\bat \S+ \(|\.ts:\d+|node_modules|\/work\/|\/home\/|\/tmp\//.source,
    /SQLITE|sqlite3?_|\bSELECT\b|INSERT INTO|\bpg_|postgres|TypeError|ReferenceError/.source,
  ].join('|'),
  'i',
)

/**
 * The fuzzing target: a listening server, the document it serves, and the catalogue every accepted create
 * built. `send` puts one request on the wire and checks what must hold for every answer: no 5xx; every
 * error is exactly `{code, message, status}` with the HTTP status, in JSON, leaking nothing; the answer
 * conforms to the OpenAPI document; no version banner; nothing reached Object.prototype; and the store
 * gained a pet only when a create answered 201 — that pet, exactly as answered.
 */
export class FuzzTarget {
  requests = 0
  readonly pets: ModelPet[] = []
  readonly server: TestServer
  readonly revokedKey: string
  readonly #conformance: OpenApiConformance
  readonly #prototypeKeys = Object.getOwnPropertyNames(Object.prototype).join()

  private constructor(server: TestServer, conformance: OpenApiConformance, revokedKey: string) {
    this.server = server
    this.#conformance = conformance
    this.revokedKey = revokedKey
  }

  static async on(server: TestServer): Promise<FuzzTarget> {
    const revokedKey = generateApiKey()
    await server.store.createApiKey(storedFormOf('revoked', revokedKey))
    await server.store.revokeApiKey('revoked')
    return new FuzzTarget(server, await conformanceOf(server), revokedKey)
  }

  /** Fills `{KEY}` and `{REVOKED}` in with the real keys. */
  fill(text: string): string {
    return text.replaceAll('{KEY}', this.server.key).replaceAll('{REVOKED}', this.revokedKey)
  }

  async send(request: WireRequest): Promise<{ reply: WireResponse; created?: ModelPet }> {
    const filled: WireRequest = {
      ...request,
      target: this.fill(request.target),
      headers: (request.headers ?? []).map(([name, value]) => [
        name,
        typeof value === 'string' ? this.fill(value) : value,
      ]),
    }
    const lastId = this.pets.at(-1)?.id
    this.requests++
    const reply = await sendWire(this.server.origin, filled)
    const what = `${request.method} ${request.target} → ${reply.status} ${reply.text.slice(0, 300)}`
    this.#checkReply(filled, reply, what)
    const added = await this.server.store.listPets({
      limit: 2,
      ...(lastId === undefined ? {} : { afterId: lastId }),
    })
    const replayed = reply.headers.get('idempotent-replayed') === 'true'
    if (reply.status !== 201 || replayed) {
      assert.equal(added.length, 0, `${what}: a request that created nothing by its answer added a pet`)
      return { reply }
    }
    assert.equal(added.length, 1, `${what}: a 201 must add exactly one pet`)
    const created = modelOf(parseExact(reply.text))
    assert.deepEqual(modelOf(added[0] as Pet), created, `${what}: the stored pet differs from the answer`)
    this.pets.push(created)
    return { reply, created }
  }

  #checkReply(request: WireRequest, reply: WireResponse, what: string): void {
    assert.ok(reply.status < 500, `${what}: no request may cause a 5xx`)
    assert.equal(reply.headers.get('server'), null, `${what}: Server banner`)
    assert.equal(reply.headers.get('x-powered-by'), null, `${what}: X-Powered-By banner`)
    assert.equal(
      Object.getOwnPropertyNames(Object.prototype).join(),
      this.#prototypeKeys,
      `${what}: prototype polluted`,
    )
    const isDocsPage = /^\/docs(\/|$|\?)/.test(request.target) && reply.status < 400
    if (!isDocsPage) {
      this.#conformance.check({
        method: request.method,
        path: request.target,
        status: reply.status,
        headers: reply.headers,
        text: reply.text,
      })
    }
    if (reply.status < 400 || request.method === 'HEAD') return
    assert.match(
      reply.headers.get('content-type') ?? '',
      /^application\/json(;|$)/,
      `${what}: error content type`,
    )
    const body = JSON.parse(reply.text)
    assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status'], `${what}: error body fields`)
    assert.equal(body.status, reply.status, `${what}: Error.status`)
    // A JSON syntax error quotes the start of the body: what the client sent is no leak, so it is left out.
    const message = String(body.message).replace(/(not valid JSON: ).*/s, '$1…')
    assert.doesNotMatch(message, LEAK, `${what}: the error message leaks internals`)
  }

  /**
   * Fills the catalogue with 24 pets (every status, int64 edges) and returns the cursors of three next links
   * (no status, sold, available) with the id each page ended on.
   */
  async seed(): Promise<KnownCursor[]> {
    const auth: [string, string] = ['Authorization', 'Bearer {KEY}']
    const statuses = ['available', 'pending', 'sold', undefined]
    for (let i = 0; i < 24; i++) {
      const status = statuses[i % 4]
      const categoryId = i % 2 ? 2n ** 63n - 1n - BigInt(i) : -(2n ** 63n) + BigInt(i)
      const body = `{"name":"seed ${i}","categoryId":${categoryId}${status ? `,"status":"${status}"` : ''}}`
      const { reply } = await this.send({
        method: 'POST',
        target: '/v1/pets',
        headers: [auth, ['Content-Type', 'application/json']],
        body,
      })
      assert.equal(reply.status, 201, reply.text)
    }
    const cursors: KnownCursor[] = []
    for (const status of [undefined, 'sold', 'available']) {
      const { reply } = await this.send({
        method: 'GET',
        target: `/v1/pets?limit=2${status ? `&status=${status}` : ''}`,
        headers: [auth],
      })
      const cursor = /[?&]cursor=([^&>]+)/.exec(reply.headers.get('link') ?? '')?.[1]
      assert.ok(cursor, `a next link for ${status}`)
      const last = parseExact(reply.text).at(-1).id as bigint
      cursors.push({ cursor, afterId: last, ...(status ? { status } : {}) })
    }
    return cursors
  }

  /** The pets the catalogue must hold after `afterId`, with `status`, in id order. */
  expectedPage(query: { limit: number; status?: string; afterId?: bigint }): {
    page: ModelPet[]
    more: boolean
  } {
    const matching = this.pets.filter(
      (pet) =>
        (query.status === undefined || pet.status === query.status) &&
        (query.afterId === undefined || pet.id > query.afterId),
    )
    return { page: matching.slice(0, query.limit), more: matching.length > query.limit }
  }

  /** The whole store, read directly, equals the model: nothing changed, vanished or appeared unseen. */
  async checkCatalogue(): Promise<void> {
    const stored: ModelPet[] = []
    for (let pages = 0; ; pages++) {
      assert.ok(pages < 1000, 'the catalogue did not end within 1,000 pages of 500')
      const afterId = stored.at(-1)?.id
      const page = await this.server.store.listPets({
        limit: 500,
        ...(afterId === undefined ? {} : { afterId }),
      })
      stored.push(...page.map(modelOf))
      if (page.length < 500) break
    }
    assert.deepEqual(stored, this.pets)
  }
}

/** Asserts an accepted create answered exactly the name, categoryId and status that were sent. */
export function assertEchoed(
  created: ModelPet | undefined,
  sent: { name: string; categoryId: bigint; status?: string },
  what: string,
): void {
  assert.ok(created, `${what}: no pet was created`)
  assert.deepEqual(
    { ...created, id: 0n },
    { id: 0n, ...sent },
    `${what}: the created pet differs from what was sent`,
  )
}
