import type { FastifyRequest } from 'fastify'
import { ApiError } from '../errors.ts'
import { contentTypeParameters } from './content-type-parameters.ts'
import { echoed } from './echoed-text.ts'
import { parseExactly } from './json-exact-parse.ts'
import { contentTypeRepeated } from './raw-headers.ts'

const UTF8 = new Set(['utf-8', 'utf8'])
const utf8 = new TextDecoder('utf-8', { fatal: true })

/** Refuses a charset other than UTF-8, and parameters that could be read more than one way. */
function checkCharset(contentType: string): void {
  // The usual `application/json` has none.
  if (!contentType.includes(';')) return
  const read = contentTypeParameters(contentType)
  if (!read.valid) {
    throw new ApiError('unsupported_media_type', `Content-Type ${echoed(contentType)} is not valid`)
  }
  if (read.repeated !== undefined) {
    throw new ApiError('bad_request', `${echoed(read.repeated)} is given more than once in Content-Type`)
  }
  const charset = read.parameters.get('charset')?.toLowerCase()
  if (charset !== undefined && !UTF8.has(charset)) {
    throw new ApiError(
      'unsupported_media_type',
      `charset ${echoed(charset)} is not supported: send UTF-8 JSON`,
    )
  }
}

/** Refuses what would otherwise be read as something else than what the client meant to send. */
function checkEnvelope(request: FastifyRequest): void {
  const repeated = contentTypeRepeated(request.raw.rawHeaders)
  if (repeated) throw repeated
  checkCharset(request.headers['content-type'] ?? '')
  const encoding = request.headers['content-encoding']
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
    throw new ApiError('unsupported_media_type', `Content-Encoding ${echoed(encoding)} is not supported`, {
      'accept-encoding': 'identity',
    })
  }
}

function parse(request: FastifyRequest, body: Buffer): unknown {
  checkEnvelope(request)
  // No content, as a request with no framing has (RFC 9112 §6.3): answered as that one is.
  if (body.length === 0) throw new ApiError('invalid_body', 'request body must be a JSON object')
  let text: string
  try {
    text = utf8.decode(body)
  } catch {
    throw new ApiError('malformed_json', 'request body is not valid UTF-8')
  }
  let parsed: ReturnType<typeof parseExactly>
  try {
    parsed = parseExactly(text)
  } catch (error) {
    if (error instanceof ApiError) throw error
    throw new ApiError('malformed_json', `request body is not valid JSON: ${(error as Error).message}`)
  }
  const { value, duplicateKey, duplicateWithin } = parsed
  if (duplicateWithin !== undefined)
    throw new ApiError(
      'invalid_body',
      `body field ${echoed(duplicateWithin)} holds the key ${echoed(duplicateKey ?? '')} more than once`,
    )
  if (duplicateKey !== undefined)
    throw new ApiError('invalid_body', `body field ${echoed(duplicateKey)} is given more than once`)
  return value
}

/** Fastify content-type parser for `application/json` bodies (registered with `parseAs: 'buffer'`). */
export function parseJsonBody(
  request: FastifyRequest,
  body: Buffer,
  done: (error: Error | null, value?: unknown) => void,
): void {
  let value: unknown
  try {
    value = parse(request, body)
  } catch (error) {
    done(error as Error)
    return
  }
  done(null, value)
}
