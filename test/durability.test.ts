import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { startServeProcess } from './helpers/cli-process.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

const KILLS = 3
const CLIENTS = 8

describe('durability', () => {
  test(`when the server is killed with SIGKILL ${KILLS} times under concurrent creates, then no acknowledged create is lost`, async (t) => {
    const cwd = temporaryDirectory(t)
    const key = generateApiKey()
    const env = { API_KEYS: `crash:${key}` }
    const acknowledged = new Map<string, string>() // name → the 201 body
    const sent = new Set<string>()
    let unknown = 0
    let sequence = 0

    for (let round = 0; round < KILLS; round++) {
      const server = await startServeProcess(env, cwd)
      t.after(() => server.child.kill('SIGKILL'))
      let running = true
      const client = async (clientId: number) => {
        while (running) {
          const name = `c${clientId}-${sequence++}`
          sent.add(name)
          try {
            const response = await fetch(`${server.origin}/v1/pets`, {
              method: 'POST',
              headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
              body: JSON.stringify({ name, categoryId: sequence }),
            })
            const text = await response.text()
            if (response.status === 201) acknowledged.set(name, text)
            else assert.fail(`unexpected ${response.status}: ${text}`)
          } catch (error) {
            if (!running) {
              unknown++
              return
            }
            throw error
          }
        }
      }
      const clients = Array.from({ length: CLIENTS }, (_, i) => client(i))
      await sleep(150 + Math.random() * 350)
      running = false
      server.child.kill('SIGKILL')
      await server.exited
      await Promise.all(clients)
    }

    assert.ok(acknowledged.size > 50, `only ${acknowledged.size} creates were acknowledged`)
    const server = await startServeProcess(env, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    for (const body of acknowledged.values()) {
      const { id } = JSON.parse(body)
      const response = await fetch(`${server.origin}/v1/pets/${id}`, {
        headers: { authorization: `Bearer ${key}` },
      })
      assert.equal(await response.text(), body, 'every acknowledged pet is present and identical')
    }
    server.child.kill('SIGTERM')
    assert.equal(await server.exited, 0)

    const database = new DatabaseSync(join(cwd, 'data', 'petstore.db'), { readOnly: true })
    t.after(() => database.close())
    assert.equal(database.prepare('PRAGMA integrity_check').get()?.integrity_check, 'ok')
    const stored = database.prepare('SELECT name FROM pets').all() as Array<{ name: string }>
    const unexpected = stored.filter(({ name }) => !sent.has(name))
    assert.deepEqual(unexpected, [], 'nothing is stored that was never sent')
    t.diagnostic(`acknowledged ${acknowledged.size}, unknown ${unknown}, stored ${stored.length}`)
  })
})
