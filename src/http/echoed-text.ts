// What a client named that an error message repeats (a parameter's or a field's name, a charset): cut
// to a length a message can hold, and quoted as JSON writes a string, with every other control, format
// (bidirectional overrides among them), private or unassigned character escaped too, so that the
// message cannot reorder, hide or forge what a log, a terminal or a page shows around it.
const SHOWN = 64
const UNSAFE = /\p{C}/gu

/** `text` in double quotes as an error message may show it: at most 64 characters, the unsafe escaped. */
export function echoed(text: string): string {
  const cut = text.length > SHOWN ? `${text.slice(0, SHOWN)}…` : text
  return JSON.stringify(cut).replace(UNSAFE, (character) => {
    const code = character.codePointAt(0) ?? 0
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`
  })
}
