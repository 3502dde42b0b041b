import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import { before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { installPackedClient } from './helpers/client-package.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { startTestServer, suiteCleanup, type TestServer } from './helpers/test-server.ts'

const EXAMPLES = fileURLToPath(new URL('../examples/', import.meta.url))

/**
 * Runs an example as a user would, with only PATH and the two variables the examples document; one still
 * running after 20 s is killed, and its code is then null.
 */
function runExample(command: string, args: string[], server: TestServer, key = server.key, cwd?: string) {
  const child = spawn(command, args, {
    cwd,
    env: { PATH: process.env.PATH ?? '', PETSTORE_URL: `${server.origin}/v1`, PETSTORE_API_KEY: key },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 20_000,
    killSignal: 'SIGKILL',
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** `describe` options for the curl example: skipped without curl, except under CI, where that fails. */
function curlSuiteOptions(): { skip?: string } {
  const installed = spawnSync('curl', ['--version']).status === 0
  return suiteNeeding(
    'the curl example',
    installed ? undefined : { missing: 'no curl on this machine', remedy: 'apt-get install curl' },
  )
}

// Run as another team runs it: copied into their project, next to @petstore/client installed from the tarball.
describe('examples/list-and-create.ts', () => {
  const cleanup = suiteCleanup()
  let project = ''
  before(async () => {
    project = (await installPackedClient(cleanup)).directory
    copyFileSync(`${EXAMPLES}list-and-create.ts`, join(project, 'list-and-create.ts'))
  })

  test('when run against a server, then it creates one pet, replays it and lists it as available', async (t) => {
    const server = await startTestServer(t)
    const run = await runExample(process.execPath, ['list-and-create.ts'], server, server.key, project)
    assert.equal(run.code, 0, run.stderr)
    assert.match(run.stdout, /^created pet 1: Rex, category 9007199254740993, available$/m)
    assert.match(run.stdout, /^retried with the same Idempotency-Key: pet 1 again$/m)
    assert.match(run.stdout, /^ {2}1\tRex\tcategory 9007199254740993$/m)
    assert.match(run.stdout, /^1 available pet\(s\)$/m)
    assert.equal((await server.store.listPets({ limit: 10 })).length, 1)
  })

  test('when the key is wrong, then it prints the Error code and exits 1', async (t) => {
    const server = await startTestServer(t)
    const run = await runExample(process.execPath, ['list-and-create.ts'], server, 'psk_wrong', project)
    assert.equal(run.code, 1)
    assert.match(run.stderr, /^petstore answered 401 unauthorized: /m)
  })
})

describe('examples/curl.sh', curlSuiteOptions(), () => {
  test('when run against a server, then the three operations answer and the 404 shows the Error body', async (t) => {
    const server = await startTestServer(t)
    const run = await runExample('bash', [`${EXAMPLES}curl.sh`], server)
    assert.equal(run.code, 0, run.stderr)
    const rex = '{"id":1,"name":"Rex","categoryId":9007199254740993,"status":"available"}'
    assert.match(run.stdout, new RegExp(`^# createPet.*\\n${RegExp.escape(rex)}$`, 'm'))
    assert.match(run.stdout, new RegExp(`^# listPets.*\\n${RegExp.escape(`[${rex}]`)}$`, 'm'))
    assert.match(run.stdout, new RegExp(`^# getPet 1 .*\\n${RegExp.escape(rex)}$`, 'm'))
    assert.match(run.stdout, /^\{"code":"pet_not_found","message":"[^"]+","status":404\}\nHTTP 404$/m)
  })

  test('when the key is wrong, then it stops at the first call with a non-zero exit and the Error body', async (t) => {
    const server = await startTestServer(t)
    const run = await runExample('bash', [`${EXAMPLES}curl.sh`], server, 'psk_wrong')
    assert.equal(run.code, 1)
    assert.match(run.stderr, /^\{"code":"unauthorized",.*"status":401\}/m)
  })
})
