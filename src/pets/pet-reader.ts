import { ApiError } from '../errors.ts'
import { LIST_LIMIT, type ListPetsQuery, type Pet } from '../schemas/pet.ts'
import type { Store } from '../store/store.ts'
import type { PageCursors } from './page-cursor.ts'
import type { ReadCache } from './read-cache.ts'
import { type Representation, representationOf } from './representation.ts'

export interface PetReaderOptions {
  store: Pick<Store, 'getPet' | 'listPets'>
  cursors: PageCursors
  /** Serialized answers that never change (see ReadCache). */
  cache: ReadCache
  /** Where next-page links point (`PUBLIC_BASE_URL`). */
  publicBaseUrl: string
}

/** Turns values into the exact bytes of the response (the route's own response serializer). */
export type Serialize = (value: unknown) => string

/**
 * The two reads, each answered as its serialized representation, from the read cache when it holds it.
 * A cached answer is returned as it is, not in a promise: nearly every read is one, and the route can then
 * answer in the same turn (see `sendRepresentationOf`).
 */
export interface PetReader {
  /** A page of `listPets`, with a `Link: <…>; rel="next"` header when more pets follow; a bad cursor throws. */
  page(query: ListPetsQuery, serialize: Serialize): Representation | Promise<Representation>
  /** One pet; 404 `pet_not_found` when no pet has the id. */
  pet(id: bigint, serialize: Serialize): Representation | Promise<Representation>
}

export function petReader({ store, cursors, cache, publicBaseUrl }: PetReaderOptions): PetReader {
  async function readPage(
    key: string,
    {
      limit,
      status,
      afterId,
    }: { limit: number; status: ListPetsQuery['status']; afterId: bigint | undefined },
    serialize: Serialize,
  ): Promise<Representation> {
    // One row more than asked says whether a next page exists, without counting anything.
    const generation = cache.generation
    const pets = await store.listPets({ limit: limit + 1, status, afterId })
    const full = pets.length > limit
    if (!full) return representationOf(serialize(pets))
    pets.length = limit
    const next = new URLSearchParams({ limit: String(limit), ...(status ? { status } : {}) })
    next.set('cursor', cursors.encode({ afterId: (pets.at(-1) as Pet).id, status }))
    const page = representationOf(serialize(pets), { link: `<${publicBaseUrl}/pets?${next}>; rel="next"` })
    // A full page followed by more pets never changes (but under a copy); the last page does, as pets are added.
    cache.setPage(key, page, generation)
    return page
  }

  async function readPet(key: string, id: bigint, serialize: Serialize): Promise<Representation> {
    const found = await store.getPet(id)
    if (found === undefined) throw new ApiError('pet_not_found', `no pet has id ${id}`)
    const representation = representationOf(serialize(found))
    cache.set(key, representation)
    return representation
  }

  return {
    page({ limit = LIST_LIMIT.default, status, cursor }, serialize) {
      const afterId = cursor === undefined ? undefined : cursors.decode(cursor, status)
      const key = `list:${status ?? ''}:${afterId ?? ''}:${limit}`
      return cache.get(key) ?? readPage(key, { limit, status, afterId }, serialize)
    },

    pet(id, serialize) {
      const key = `pet:${id}`
      return cache.get(key) ?? readPet(key, id, serialize)
    },
  }
}
