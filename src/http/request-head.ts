import type { IncomingMessage } from 'node:http'
import { ApiError } from '../errors.ts'
import { maskApiKeys } from '../log/key-masking.ts'
import { rememberingLastPass } from './last-passed.ts'
import { countHeader } from './raw-headers.ts'

// RFC 9110 §7.2: Host = uri-host [ ":" port ], uri-host being an IP literal in brackets or a reg-name
// (RFC 3986: unreserved, percent-encoded and sub-delims characters; an IPv4 address is one too).
const HOST = /^(?:\[[\w.:~!$&'()*+,;=-]+\]|(?:[\w.~!$&'()*+,;=-]|%[\dA-Fa-f]{2})*)(?::\d*)?$/

// Nearly every request names the host the last one did: that one is not matched again (about 400
// instructions a request, docs/decisions.md "Per-request cost").
const isValidHost = rememberingLastPass((host) => HOST.test(host))

/** An absolute-form target's user and password (`http://user:pw@host/…`), up to its last `@`. */
export const TARGET_USERINFO = /^([a-z][a-z\d+.-]*:\/\/)[^/?#]*@/i

/** The longest request target read, in bytes (as nginx's default buffer): a longer one is answered 414. */
export const TARGET_MAX_BYTES = 8192

/** RFC 9112 §3: a target longer than the server reads is answered 414. */
export const targetTooLong = () =>
  new ApiError(
    'uri_too_long',
    `the request target is over the ${TARGET_MAX_BYTES} bytes read here (RFC 9112 §3)`,
  )

// The request's body is not read, and its framing is not trusted for a next request: the connection ends.
const refused = (message: string) => new ApiError('bad_request', message, { connection: 'close' })

/**
 * What RFC 9112 asks a server to refuse in a request's head before reading on, or undefined: another version
 * than HTTP/1.1 and 1.0, a target over TARGET_MAX_BYTES or holding a fragment, not exactly one valid Host, a
 * transfer coding other than `chunked` alone (docs/decisions.md, "Host and Transfer-Encoding").
 */
export function headRefusal(raw: IncomingMessage): ApiError | undefined {
  const version = raw.httpVersion
  // Node's parser takes HTTP/2.0 and HTTP/0.9 request lines, and would serve them as HTTP/1.1.
  if (version !== '1.1' && version !== '1.0') {
    return refused(`HTTP/${version} is not served here: send HTTP/1.1 (RFC 9112 §2.3)`)
  }
  const url = raw.url ?? ''
  if (url.length > TARGET_MAX_BYTES) return targetTooLong()
  // RFC 9110 §4.2.4: userinfo in a target is an error (and a password the log must not keep).
  if (url.charCodeAt(0) !== 0x2f && TARGET_USERINFO.test(url)) {
    return refused(
      'the request target holds a user or password (user:password@): never sent in a request (RFC 9110 §4.2.4)',
    )
  }
  // The router would read what follows a `#` as the query string.
  if (url.includes('#')) {
    return refused('the request target holds "#": a fragment is never sent in a request (RFC 9112 §3.2)')
  }
  const host = raw.headers.host
  if (host === undefined) {
    if (version === '1.1') return refused('the Host header is required (RFC 9112 §3.2)')
  } else if (!isValidHost(host)) {
    return refused(`the Host header is not a valid host[:port] (RFC 9112 §3.2)`)
  } else if (countHeader(raw.rawHeaders, 'host') > 1) {
    return refused('the Host header is repeated (RFC 9112 §3.2)')
  }
  const transferEncoding = raw.headers['transfer-encoding']
  if (transferEncoding === undefined) return undefined
  if (version === '1.0') {
    return refused('Transfer-Encoding is not allowed in an HTTP/1.0 request (RFC 9112 §6.1)')
  }
  if (transferEncoding.trim().toLowerCase() !== 'chunked') {
    return refused(
      `Transfer-Encoding ${JSON.stringify(maskApiKeys(transferEncoding).slice(0, 100))} is not supported: send the body ` +
        'chunked alone, or with Content-Length (RFC 9112 §6.1)',
    )
  }
  return undefined
}

/**
 * Whether `Expect` asks for 100-continue alone (RFC 9110 §10.1.1). Node reads any value holding the word
 * as it; one asking for more is answered 417 here, as any expectation the service does not meet.
 */
export function expectsContinueAlone({ headers }: IncomingMessage): boolean {
  return headers.expect?.trim().toLowerCase() === '100-continue'
}

/** Whether the client waits for `100 Continue` before it sends the body (RFC 9110 §10.1.1). */
export function awaitsInvitation(request: IncomingMessage): boolean {
  return request.httpVersion === '1.1' && expectsContinueAlone(request)
}
