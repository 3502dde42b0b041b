/** Makes one line from what `writeLater` was given and hands it to the output's `write` or `writeAscii`. */
export type LineMaker<T> = (record: T) => void

// Lines taken to be made later are made once this many wait: a run of lines made back to back keeps
// their code in the core's caches (docs/decisions.md, "The request log is buffered").
export const LATER_LINES = 64

/** Lines taken to be made later, oldest first: each one's maker and what it is made from. */
export class LaterLines {
  #makers: Array<LineMaker<never>> = []
  #records: unknown[] = []

  /** Whether any line waits. */
  get waiting(): boolean {
    return this.#records.length > 0
  }

  /** Takes a line to be made later; true once `LATER_LINES` wait, when they should be made. */
  take<T>(make: LineMaker<T>, record: T): boolean {
    this.#makers.push(make)
    this.#records.push(record)
    return this.#records.length >= LATER_LINES
  }

  /** Makes every waiting line, oldest first; a maker that throws is handed to `failed`, the rest still made. */
  makeAll(failed: (error: unknown) => void): void {
    const makers = this.#makers
    const records = this.#records
    // Emptied first: a maker writes through the output, which must find nothing waiting.
    this.#makers = []
    this.#records = []
    for (let at = 0; at < records.length; at++) {
      const make = makers[at] as LineMaker<unknown>
      try {
        make(records[at])
      } catch (error) {
        failed(error)
      }
    }
  }
}
