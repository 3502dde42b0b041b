import { ApiError } from '../errors.ts'

/**
 * How many times a header was sent. Node keeps only the first of some repeated headers (Authorization,
 * Content-Type…); a request that repeats one is ambiguous and is refused instead.
 */
export function countHeader(rawHeaders: readonly string[], lowerCaseName: string): number {
  let count = 0
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (name.length === lowerCaseName.length && name.toLowerCase() === lowerCaseName) count++
  }
  return count
}

/**
 * 400 when Content-Type is sent more than once (Node keeps the first), before anything reads it: the same
 * answer whichever comes first, the JSON one or another no parser takes (error-handler.ts).
 */
export function contentTypeRepeated(rawHeaders: readonly string[]): ApiError | undefined {
  if (countHeader(rawHeaders, 'content-type') <= 1) return undefined
  return new ApiError('bad_request', 'more than one Content-Type header')
}
