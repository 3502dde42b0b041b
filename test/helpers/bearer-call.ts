import { checkedFetch } from './conformance-fetch.ts'

/** One request to `origin` with `key` as its bearer (and `body` as JSON): its status, text and Link header. */
export async function call(
  origin: string,
  key: string | undefined,
  method: string,
  path: string,
  body?: string,
) {
  const response = await checkedFetch(origin, path, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body,
  })
  return { status: response.status, text: await response.text(), link: response.headers.get('link') }
}

/** A GET on `origin` (with `key` as its bearer, if given), as a command-line test reads a served page. */
export const get = (origin: string, path: string, key?: string) => call(origin, key, 'GET', path)
