import { parse } from 'fast-querystring'
import { LRUCache } from 'lru-cache'

/**
 * Each distinct query string is parsed once, and its frozen form handed to every request that sends it
 * (docs/decisions.md, "Query strings are memoized").
 */
export const QUERY_MEMO = {
  // Distinct query strings kept, least recently used first out: a walk through cursors passes by.
  maxEntries: 1000,
  // Longer query strings, or ones with more parameters than any operation takes or a parameter given
  // twice (always refused), are parsed for each request and not kept. Measured: 1,000 entries of the
  // largest kind kept (four parameters, 500 characters) hold 0.8 MiB of heap.
  maxLength: 512,
  maxParameters: 4,
} as const

// The parsed forms this memo hands out, which every request with the same query string shares.
const shared = new WeakSet<object>()
const EMPTY = share(Object.create(null))
/** A query string with a malformed percent-encoding: refused as a malformed URL (request-lifecycle.ts). */
export const MALFORMED_QUERY: Record<string, unknown> = share(Object.create(null))
const memo = new LRUCache<string, Record<string, unknown>>({ max: QUERY_MEMO.maxEntries })
// The query string last found or kept in the memo, and its parsed form.
let lastQuery: string | undefined
let lastParsed: Record<string, unknown> = EMPTY

function share(query: Record<string, unknown>): Record<string, unknown> {
  shared.add(Object.freeze(query))
  return query
}

/**
 * The router's query-string parser (fast-querystring, as Fastify's own default), memoized: the same
 * string gives the same frozen object. A parameter given twice still parses to an array, which the
 * validator refuses.
 */
export function parseQuery(query: string): Record<string, unknown> {
  if (query.length === 0) return EMPTY
  // The last query string kept is compared first: a fresh string is hashed for the memo's lookup, which
  // costs more than comparing it (docs/decisions.md, "Query strings are memoized").
  if (query === lastQuery) return lastParsed
  if (query.length > QUERY_MEMO.maxLength) return parsedOrMalformed(query)
  let parsed = memo.get(query)
  if (parsed === undefined) {
    parsed = parsedOrMalformed(query)
    if (parsed === MALFORMED_QUERY) return parsed
    if (!worthKeeping(parsed)) return parsed
    memo.set(query, share(parsed))
  }
  lastQuery = query
  lastParsed = parsed
  return parsed
}

// fast-querystring keeps an escape it cannot decode as it is (`%zz`, `%E0%A4`): the router refuses one
// in the path, and so is one here, before any key is looked at.
function parsedOrMalformed(query: string): Record<string, unknown> {
  if (query.includes('%')) {
    try {
      decodeURIComponent(query)
    } catch {
      return MALFORMED_QUERY
    }
  }
  return parse(query)
}

function worthKeeping(parsed: Record<string, unknown>): boolean {
  let parameters = 0
  for (const name in parsed) {
    if (++parameters > QUERY_MEMO.maxParameters || Array.isArray(parsed[name])) return false
  }
  return true
}

/** Whether `query` is a parsed form the memo shares between requests (so its check can be kept too). */
export function isSharedQuery(query: unknown): query is object {
  return typeof query === 'object' && query !== null && shared.has(query)
}
