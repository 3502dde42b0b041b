import { createHmac, timingSafeEqual } from 'node:crypto'
import { ApiError } from '../errors.ts'
import { INTEGER_LITERAL, isInt64 } from '../schemas/int64.ts'
import type { PetStatus } from '../schemas/pet.ts'

const MAC_BYTES = 16
const TAMPERED =
  'query parameter "cursor" is malformed or was altered; follow the next link of the previous page'

const base64url = (text: string) => Buffer.from(text).toString('base64url')

/** Where the next page starts: after `afterId`, in the list filtered by `status`. */
export interface PagePosition {
  afterId: bigint
  status?: PetStatus
}

export interface PageCursors {
  encode(position: PagePosition): string
  /** The position a cursor stands for; 400 when it was altered or belongs to another status filter. */
  decode(cursor: string, status: PetStatus | undefined): bigint
}

/**
 * Opaque, tamper-evident paging cursors: the position in clear, signed with HMAC-SHA-256 under a secret
 * shared by every instance (kept in the database), so any instance can continue a walk another started.
 * `secret()` gives the one now in force: a copy into the store replaces it with its source's.
 */
export function pageCursors(secret: () => string): PageCursors {
  const sign = (payload: string) =>
    createHmac('sha256', secret()).update(payload).digest().subarray(0, MAC_BYTES)
  return {
    encode({ afterId, status }) {
      const payload = `${afterId}.${status ?? ''}`
      return `${base64url(payload)}.${sign(payload).toString('base64url')}`
    },
    decode(cursor, status) {
      const [encoded = '', mac = '', ...rest] = cursor.split('.')
      const payload = Buffer.from(encoded, 'base64url').toString()
      const given = Buffer.from(mac, 'base64url')
      if (rest.length > 0 || given.length !== MAC_BYTES || !timingSafeEqual(given, sign(payload))) {
        throw new ApiError('invalid_query', TAMPERED)
      }
      // Decoding skips what base64url lacks and a last character's unused bits: only the text encode
      // gives is the cursor, so an altered one is refused even when its bytes are the same.
      if (base64url(payload) !== encoded || given.toString('base64url') !== mac) {
        throw new ApiError('invalid_query', TAMPERED)
      }
      const [afterId = '', cursorStatus = ''] = payload.split('.')
      const id = INTEGER_LITERAL.test(afterId) ? BigInt(afterId) : undefined
      if (!isInt64(id)) throw new ApiError('invalid_query', TAMPERED)
      if (cursorStatus !== (status ?? '')) {
        throw new ApiError(
          'invalid_query',
          'query parameter "cursor" belongs to a list with another status filter',
        )
      }
      return id
    },
  }
}
