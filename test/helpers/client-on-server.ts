import assert from 'node:assert/strict'
import {
  createClient,
  type Pet,
  type PetStoreClient,
  PetStoreError,
} from '../../packages/client/src/index.ts'
import type { Cleanup } from './cleanup.ts'
import { startTestServer, type TestServer } from './test-server.ts'

/**
 * A fresh server (with `env`'s settings) and a client holding its key; `seen` collects every request the
 * client sent.
 */
export async function clientOnServer(
  t: Cleanup,
  options: { apiKey?: string; env?: Record<string, string> } = {},
) {
  const server: TestServer = await startTestServer(t, options.env === undefined ? {} : { env: options.env })
  const seen: Request[] = []
  const client: PetStoreClient = createClient({
    baseUrl: `${server.origin}/v1`,
    apiKey: options.apiKey ?? server.key,
    fetch: (url, init) => {
      seen.push(new Request(url, init))
      return fetch(url, init)
    },
  })
  return { server, client, seen }
}

export async function collect(pets: AsyncIterable<Pet>): Promise<Pet[]> {
  const all: Pet[] = []
  for await (const pet of pets) all.push(pet)
  return all
}

export async function rejection(promise: Promise<unknown>): Promise<PetStoreError> {
  const error = await promise.then(
    () => assert.fail('the call succeeded'),
    (error: unknown) => error,
  )
  assert.ok(error instanceof PetStoreError, `not a PetStoreError: ${error}`)
  return error
}
