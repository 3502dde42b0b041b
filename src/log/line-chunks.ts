// The log output's pieces that know no stream: lines made safe for a terminal, and runs of whole lines
// as they are written (log-output.ts).

// DEL, U+0080 to U+009F (C1 controls: U+009B is a terminal's CSI, as ESC [ is) and U+2028/U+2029, which
// some readers take for line ends. JSON allows them raw; only inside strings can they be, where \u escapes
// them. The units `escapedInLine` names; the class is the pretty output's too (logger.ts).
export const CONTROL_CLASS = '[\\u007f-\\u009f\\u2028\\u2029]'
const CONTROLS = new RegExp(CONTROL_CLASS, 'g')

/** Whether a line holds UTF-16 unit `code` as its `\uXXXX` escape though JSON allows it raw (CONTROLS). */
export function escapedInLine(code: number): boolean {
  return (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029
}
/** A UTF-16 unit as JSON's `\\uXXXX` escape of it (the same value in a JSON string). */
export const unicodeEscape = (unit: string): string =>
  `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`

/** A JSON line with its DEL, C1 controls and line separators escaped: the same values, safe on a terminal. */
export function escapeControls(line: string): string {
  return line.search(CONTROLS) === -1 ? line : line.replace(CONTROLS, unicodeEscape)
}

/** A run of whole lines, encoded: at most one write long, unless one line is longer. */
export interface Chunk {
  buffer: Buffer
  // The buffer's length, kept as a field: reading a Buffer's length is a call, and this is read per line.
  capacity: number
  used: number
  lines: number
}

/** How many lines end within the first `bytes` bytes of a chunk. */
export function wholeLines(chunk: Chunk, bytes: number): number {
  const written = chunk.buffer.subarray(0, Math.min(bytes, chunk.used))
  let lines = 0
  for (let at = written.indexOf(10); at !== -1; at = written.indexOf(10, at + 1)) lines++
  return lines
}
