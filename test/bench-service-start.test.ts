import assert from 'node:assert/strict'
import { once } from 'node:events'
import { type AddressInfo, createServer } from 'node:net'
import { join } from 'node:path'
import { test } from 'node:test'
import { startService } from '../bench/service-process.ts'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { freePort } from './helpers/free-port.ts'

// The bench chooses a free port, then starts the service on it: another process may take it between the
// two, and a full run of three quarters of an hour was lost so.
test('when the port chosen for the bench service is taken before it listens, then the bench starts it again on another, which serves', async (t) => {
  const cwd = temporaryDirectory(t)
  const taker = createServer()
  taker.listen(0, '127.0.0.1')
  await once(taker, 'listening')
  t.after(() => taker.close())
  const taken = (taker.address() as AddressInfo).port
  const chosen: number[] = []
  const choosePort = async () => {
    const port = chosen.length === 0 ? taken : await freePort()
    chosen.push(port)
    return port
  }
  const service = await startService(
    {
      databaseUrl: `sqlite:${join(cwd, 'petstore.db')}`,
      apiKey: generateApiKey(),
      cwd,
      extraEnv: {},
      nodeFlags: [],
      logSink: 'pipe',
    },
    choosePort,
  )
  t.after(() => service.stop())
  assert.equal(chosen.length, 2)
  assert.equal(service.origin, `http://127.0.0.1:${chosen[1]}`)
  assert.equal((await fetch(`${service.origin}/v1/openapi.json`)).status, 200)
})
