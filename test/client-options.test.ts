import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createClient } from '../packages/client/src/index.ts'
import { startTestServer } from './helpers/test-server.ts'

describe('typed client: the options createClient takes', () => {
  test('when a call is given `signal: null` (as fetch takes it, from plain JavaScript), then it runs, with the time limit or without', async (t) => {
    const server = await startTestServer(t)
    for (const timeoutMs of [undefined, 0]) {
      const client = createClient({
        baseUrl: `${server.origin}/v1`,
        apiKey: server.key,
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
      })
      const signal = null as unknown as AbortSignal
      assert.deepEqual((await client.listPets({}, { signal })).pets, [], `timeoutMs ${timeoutMs}`)
    }
  })

  test('when timeoutMs is past what a timer can wait, then createClient refuses it', () => {
    for (const timeoutMs of [2 ** 31, 2 ** 32, -1, 1.5]) {
      assert.throws(
        () => createClient({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'psk_unused', timeoutMs }),
        /timeoutMs must be a whole number of milliseconds from 0 to 2147483647/,
      )
    }
  })

  test('when the key holds a character a header cannot carry, then createClient refuses without echoing it', () => {
    for (const apiKey of ['psk_SECRET\r\nX-Evil: 1', 'psk_SECRET\u0000', 'psk_SECRET é', '', ' \n']) {
      assert.throws(
        () => createClient({ baseUrl: 'http://127.0.0.1:9/v1', apiKey }),
        (error: Error) => error instanceof TypeError && !error.message.includes('SECRET'),
      )
    }
  })

  test('when baseUrl is not an http(s) URL a path can follow, then createClient refuses it in one sentence', () => {
    for (const baseUrl of [
      'localhost:8080/v1',
      'ftp://host/v1',
      'http://host/v1?x=1',
      'http://host/v1#top',
      '',
    ]) {
      assert.throws(
        () => createClient({ baseUrl, apiKey: 'psk_unused' }),
        /^TypeError: baseUrl must be an http:\/\/ or https:\/\/ URL with no query or fragment/,
        baseUrl,
      )
    }
    assert.doesNotThrow(() =>
      createClient({ baseUrl: 'https://api.example.com/petstore/v1/', apiKey: 'psk_unused' }),
    )
  })

  test('when baseUrl has white space around it (a line read from a file), then calls go to the URL it names', async (t) => {
    const server = await startTestServer(t)
    for (const baseUrl of [`${server.origin}/v1 `, ` ${server.origin}/v1\t`, `${server.origin}/v1/ \n`]) {
      const client = createClient({ baseUrl, apiKey: server.key })
      assert.deepEqual((await client.listPets({ limit: 1 })).pets, [], JSON.stringify(baseUrl))
    }
  })

  test("when baseUrl names the pets collection rather than the API's root, then createClient says so instead of a call answering 400 for petId", async (t) => {
    const server = await startTestServer(t)
    for (const baseUrl of [
      `${server.origin}/v1/pets`,
      `${server.origin}/v1/pets/`,
      'https://api.example.com/v1/PETS',
    ]) {
      assert.throws(
        () => createClient({ baseUrl, apiKey: server.key }),
        /^TypeError: baseUrl names the pets collection: give the API's root, e.g\. http:\/\/localhost:8080\/v1/,
        baseUrl,
      )
    }
    const client = createClient({ baseUrl: `${server.origin}/v1/`, apiKey: server.key })
    assert.deepEqual((await client.listPets({ limit: 1 })).pets, [])
  })

  test('when baseUrl holds a user name or password, then createClient refuses it without echoing them', () => {
    for (const baseUrl of ['http://user:SECRET@127.0.0.1:9/v1', 'https://SECRET@api.example.com/v1']) {
      assert.throws(
        () => createClient({ baseUrl, apiKey: 'psk_unused' }),
        (error: Error) =>
          error instanceof TypeError &&
          /^baseUrl must not hold a user name or password/.test(error.message) &&
          !error.message.includes('SECRET'),
        baseUrl,
      )
    }
  })
})
