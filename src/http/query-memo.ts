import { parse } from 'fast-querystring'
import { LRUCache } from 'lru-cache'

/**
 * Query strings repeat: clients ask for the same few lists (`?status=available&limit=20`) again and again.
 * Each distinct one is parsed once and its parsed form, frozen, is handed to every request that sends it;
 * the route's validator then checks it once too (validator-compiler.ts). Parsing and checking a two-field
 * query anew cost about 5,000 instructions per request (docs/decisions.md, "Query strings are memoized").
 */
export const QUERY_MEMO = {
  // Distinct query strings kept, least recently used first out: a walk through cursors passes by.
  maxEntries: 1000,
  // Longer query strings are parsed for each request and not kept: with the entry cap, at most ~1 MB.
  maxLength: 512,
} as const

// The parsed forms this memo hands out, which every request with the same query string shares.
const shared = new WeakSet<object>()
const EMPTY = share(Object.create(null))
const memo = new LRUCache<string, Record<string, unknown>>({ max: QUERY_MEMO.maxEntries })

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
  if (query.length > QUERY_MEMO.maxLength) return parse(query)
  let parsed = memo.get(query)
  if (parsed === undefined) {
    parsed = share(parse(query))
    memo.set(query, parsed)
  }
  return parsed
}

/** Whether `query` is a parsed form the memo shares between requests (so its check can be kept too). */
export function isSharedQuery(query: unknown): query is object {
  return typeof query === 'object' && query !== null && shared.has(query)
}
