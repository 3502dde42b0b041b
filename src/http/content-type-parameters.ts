/**
 * The parameters of a Content-Type value, read by RFC 9110's grammar (§5.6.6, §8.3.1) rather than
 * searched for: `type/subtype *( OWS ";" OWS [ name "=" ( token / quoted-string ) ] )`. A value that does
 * not follow it, or names a parameter twice, is refused rather than read one way or another.
 */

const TOKEN = "[!#$%&'*+.^`|~\\w-]+"
const QUOTED = '"(?:[\\t \\x21\\x23-\\x5b\\x5d-\\x7e\\x80-\\xff]|\\\\[\\t \\x21-\\x7e\\x80-\\xff])*"'
const MEDIA_TYPE = new RegExp(`^[ \\t]*${TOKEN}/${TOKEN}[ \\t]*`, 'y')
const PARAMETER = new RegExp(`;[ \\t]*(?:(${TOKEN})=(${TOKEN}|${QUOTED}))?[ \\t]*`, 'y')

export type ContentTypeParameters =
  | { valid: true; parameters: Map<string, string>; repeated?: string }
  | { valid: false }

/** Names lower-cased; quoted values unquoted. `repeated`: the first name given more than once. */
export function contentTypeParameters(value: string): ContentTypeParameters {
  const parameters = new Map<string, string>()
  MEDIA_TYPE.lastIndex = 0
  if (!MEDIA_TYPE.test(value)) return { valid: false }
  let at = MEDIA_TYPE.lastIndex
  let repeated: string | undefined
  while (at < value.length) {
    PARAMETER.lastIndex = at
    const match = PARAMETER.exec(value)
    if (match === null) return { valid: false }
    at = PARAMETER.lastIndex
    const [, name, raw] = match
    if (name === undefined || raw === undefined) continue
    const key = name.toLowerCase()
    if (parameters.has(key)) repeated ??= key
    parameters.set(key, raw.startsWith('"') ? raw.slice(1, -1).replace(/\\(.)/g, '$1') : raw)
  }
  return repeated === undefined ? { valid: true, parameters } : { valid: true, parameters, repeated }
}
