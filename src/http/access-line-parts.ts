import { maskApiKeys } from '../log/key-masking.ts'
import { unicodeEscape } from '../log/line-chunks.ts'
import { THREE_DIGITS } from './integer-text.ts'

// How many values of a fixed set are kept: far more than the methods, operations and key names there are.
const KEPT = 1000

/**
 * Values made once per key of a small fixed set (methods, operations, key names), the first KEPT kept;
 * the last one is found again without a lookup, as consecutive requests mostly repeat it.
 */
class Made<K, V> {
  readonly #make: (key: K) => V
  readonly #kept = new Map<K, V>()
  #lastKey: K | undefined
  #last: V | undefined

  constructor(make: (key: K) => V) {
    this.#make = make
  }

  of(key: K): V {
    if (key === this.#lastKey && this.#last !== undefined) return this.#last
    let value = this.#kept.get(key)
    if (value === undefined) {
      value = this.#make(key)
      if (this.#kept.size < KEPT) this.#kept.set(key, value)
    }
    this.#lastKey = key
    this.#last = value
    return value
  }
}

/**
 * Whether the text is printable ASCII but `"` and `\`, so that its JSON form is itself in quotes (ids,
 * addresses, most URLs and user agents). A loop, not a regular expression: a test's fixed cost was most
 * of the field's (docs/benchmarks/tuning.md, "Counted instructions").
 */
export function isPlain(text: string): boolean {
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at)
    if (code < 0x20 || code > 0x7e || code === 0x22 || code === 0x5c) return false
  }
  return true
}

/** JSON's form of a text that is not plain, without its quotes. */
export const escaped = (text: string): string => JSON.stringify(text).slice(1, -1)

// UTF-16 units past ASCII (search() and replace() only: a global expression's test() keeps state).
const NOT_ASCII = /[\u0080-\uffff]/g
const isAscii = (text: string): boolean => text.search(NOT_ASCII) === -1

// `JSON.stringify(text)` with units past ASCII as `\u00e9` (the same JSON value): pieces made of these
// keep a line all ASCII whatever a method, operation or key is named.
const asciiQuoted = new Made((text: string) => JSON.stringify(text).replace(NOT_ASCII, unicodeEscape))

/**
 * The parts as one flat string. A template keeps its result as a tree of its parts, which every line
 * built from it would walk again when it is written: the pieces kept for many lines are made flat once.
 */
export const flat = (...parts: string[]): string => parts.join('')

// A duration's hundredths as `String()` writes them, trailing zero dropped: '', '.01', … '.1', '.11', … '.99'.
const FRACTIONS = Array.from({ length: 100 }, (_, cents) =>
  cents === 0 ? '' : `.${`${cents}`.padStart(2, '0')}`.replace(/0$/, ''),
)

// Durations under 10 ms, nearly every request's, written once each: '0', '0.01', … '9.99'.
const SHORT_DURATIONS = Array.from(
  { length: 1000 },
  (_, total) => `${Math.trunc(total / 100)}${FRACTIONS[total % 100]}`,
)

/**
 * `String(Math.round(ms * 100) / 100)` from integers, without formatting a double. A duration that is not
 * a plain non-negative number (a clock stepped back) is written as 0, never as `NaN` or `-0.5`.
 */
export function hundredths(ms: number): string {
  const total = ms >= 0 && ms < 1e13 ? Math.round(ms * 100) : 0
  if (total < 1000) return SHORT_DURATIONS[total] as string
  const cents = total % 100
  return `${(total - cents) / 100}${FRACTIONS[cents]}`
}

/** The pieces of a line that only its method, its operation and status, or its key decide. */
export class FixedPieces {
  /** `,"method":"GET","url":"`, after a request's own bindings. */
  readonly method = new Made((method: string) => flat(',"method":', asciiQuoted.of(method), ',"url":"'))
  /** `","method":"GET","url":"`, after the request id's text. */
  readonly afterId = new Made((method: string) => flat('","method":', asciiQuoted.of(method), ',"url":"'))
  /** `,"code":"unauthorized"`: the Error body's code of a refused request. */
  readonly code = new Made((code: string) => flat(',"code":', asciiQuoted.of(code)))
  /** `,"key":"ops"`, the name masked. */
  readonly key = new Made((key: string) => flat(',"key":', asciiQuoted.of(maskApiKeys(key))))
  readonly #outcomes = new Made((_operation: string): string[] => [])

  /** `","operation":"getPet","status":200,"durationMs":`, after the URL's text. */
  outcome(operation: string, status: number): string {
    const byStatus = this.#outcomes.of(operation)
    let piece = byStatus[status]
    if (piece === undefined) {
      piece = flat('","operation":', asciiQuoted.of(operation), ',"status":', `${status}`, ',"durationMs":')
      byStatus[status] = piece
    }
    return piece
  }
}

/**
 * The start of a line: `{"level":30,"time":`, the time, then the process logger's bindings up to the request
 * id's text, keys masked. The second is made once and flat; the millisecond and what follows are
 * concatenated, a flat copy costing more than that millisecond's few lines walking it.
 */
export class LineStart {
  readonly #levelField: string
  #secondStart = Number.NaN
  #secondText = ''
  #now = Number.NaN
  // null: none seen yet (pino's own may be undefined).
  #bindings: string | undefined | null = null
  #afterTime = ''
  /** Up to the time's last digit. */
  timed = ''
  /** Up to `"reqId":"`. */
  beforeId = ''
  /** Whether the bindings are all ASCII. */
  ascii = true

  constructor(level: number) {
    this.#levelField = `{"level":${level},"time":`
  }

  /** Brings the start to time `now` (ms since the epoch) and the process logger's bindings `base`. */
  update(now: number, base: string | undefined): void {
    if (now === this.#now && base === this.#bindings) return
    if (base !== this.#bindings) {
      this.#bindings = base
      this.#afterTime = flat(maskApiKeys(base ?? ''), ',"reqId":"')
      this.ascii = isAscii(this.#afterTime)
    }
    if (now !== this.#now) {
      this.#now = now
      this.timed = this.#timed(now)
    }
    this.beforeId = this.timed + this.#afterTime
  }

  // A new millisecond costs one concatenation of its three digits, not a formatting.
  #timed(now: number): string {
    const ms = now - this.#secondStart
    if (ms >= 0 && ms < 1000 && Number.isInteger(ms)) return this.#secondText + THREE_DIGITS[ms]
    if (!(now >= 1000 && now < 1e15 && Number.isInteger(now))) {
      this.#secondStart = Number.NaN
      return `${this.#levelField}${now}`
    }
    this.#secondStart = now - (now % 1000)
    this.#secondText = flat(this.#levelField, `${this.#secondStart / 1000}`)
    return this.#secondText + THREE_DIGITS[now - this.#secondStart]
  }
}
