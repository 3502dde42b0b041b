import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { ifNoneMatchHits } from '../../http/entity-tags.ts'

// Where @fastify/swagger-ui keeps the page's files (its static folder, beside its entry point).
const PACKAGE_FILES = fileURLToPath(new URL('./static/', import.meta.resolve('@fastify/swagger-ui')))
const TYPES: Record<string, string> = {
  '.js': 'application/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
}

interface PackageFile {
  readonly body: Buffer
  readonly etag: string
  readonly type: string
}

/**
 * An onRequest hook for `/docs/static/*`: a file of the package is answered from memory, read once, with a
 * strong ETag and 304 on `If-None-Match`, and no `Range`; any other path goes on to the file server, which
 * refuses it (docs/decisions.md, "The page's files from memory").
 */
export function packageFilesFromMemory(route: string) {
  const names = new Set(readdirSync(PACKAGE_FILES).filter((name) => TYPES[extname(name)] !== undefined))
  const read = new Map<string, PackageFile>()
  const fileNamed = (name: string): PackageFile | undefined => {
    if (!names.has(name)) return undefined
    let file = read.get(name)
    if (file === undefined) {
      const body = readFileSync(join(PACKAGE_FILES, name))
      const digest = createHash('sha256').update(body).digest('base64url').slice(0, 27)
      file = { body, etag: `"${digest}"`, type: TYPES[extname(name)] as string }
      read.set(name, file)
    }
    return file
  }
  return (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    // Other methods are refused by the route's guard (405).
    const reads = request.method === 'GET' || request.method === 'HEAD'
    const file =
      reads && request.routeOptions.url === route
        ? fileNamed((request.params as { '*': string })['*'])
        : undefined
    if (file === undefined) {
      done()
      return
    }
    reply.header('etag', file.etag).type(file.type)
    if (ifNoneMatchHits(request.headers['if-none-match'], file.etag)) reply.code(304).send()
    else reply.send(file.body)
  }
}
