import { readSync } from 'node:fs'

/** What a non-blocking descriptor holds now ('' when nothing): read until it would block or ends. */
export function readAvailable(fd: number): string {
  const buffer = Buffer.alloc(64 * 1024)
  let text = ''
  for (;;) {
    try {
      const read = readSync(fd, buffer, 0, buffer.length, null)
      if (read === 0) return text
      text += buffer.toString('utf8', 0, read)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return text
      throw error
    }
  }
}
