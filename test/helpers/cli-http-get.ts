import { checkedFetch } from './conformance-fetch.ts'

/** A GET on `origin` (with `key` as its bearer, if given), as a command-line test reads a served page. */
export async function get(origin: string, path: string, key?: string) {
  const response = await checkedFetch(origin, path, {
    headers: key ? { authorization: `Bearer ${key}` } : {},
  })
  return { status: response.status, text: await response.text() }
}
