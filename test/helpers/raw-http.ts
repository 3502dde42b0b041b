import { once } from 'node:events'
import { connect, type Socket } from 'node:net'

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
}

/**
 * Sends bytes as they are (malformed requests that fetch refuses to send) and reads the reply until the
 * server closes the connection or `timeoutMs` passes.
 */
export function rawHttp(origin: string, request: string | Buffer, timeoutMs = 5000): Promise<RawResponse> {
  const { hostname, port } = new URL(origin)
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) })
    const chunks: Buffer[] = []
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no complete response within ${timeoutMs} ms: ${Buffer.concat(chunks).toString()}`))
    }, timeoutMs)
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    socket.on('close', () => {
      clearTimeout(timer)
      const text = Buffer.concat(chunks).toString()
      const [head = '', ...rest] = text.split('\r\n\r\n')
      const [statusLine = '', ...headerLines] = head.split('\r\n')
      const headers = Object.fromEntries(
        headerLines.map((line) => [
          line.slice(0, line.indexOf(':')).toLowerCase(),
          line.slice(line.indexOf(':') + 1).trim(),
        ]),
      )
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') })
    })
    socket.write(request)
  })
}

/** A connection to the server, opened and ready to write on. */
export async function openSocket(origin: string): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port: Number(new URL(origin).port) })
  await once(socket, 'connect')
  return socket
}

/**
 * Writes `bytes` on a kept-alive connection and resolves with the one whole response that follows; fails
 * if the connection closes first or no whole response has come `timeoutMs` later.
 */
export function exchange(socket: Socket, bytes: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = ''
    const settle = (outcome: () => void) => {
      clearTimeout(timer)
      socket.off('data', onData).off('close', onClose)
      outcome()
    }
    const onData = (chunk: Buffer) => {
      received += chunk
      const headEnd = received.indexOf('\r\n\r\n')
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(received.slice(0, headEnd))?.[1] ?? 0)
      if (headEnd === -1 || Buffer.byteLength(received) - headEnd - 4 < length) return
      settle(() => resolve(received))
    }
    const failed = (why: string) => () =>
      settle(() => reject(new Error(`${why} before a whole response: ${JSON.stringify(received)}`)))
    const onClose = failed('closed')
    const timer = setTimeout(failed(`${timeoutMs} ms passed`), timeoutMs)
    socket.on('data', onData).on('close', onClose)
    socket.write(bytes)
  })
}
