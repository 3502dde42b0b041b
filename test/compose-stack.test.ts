import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { suiteCleanup } from './helpers/cleanup.ts'
import { type ComposeStack, composeStack, exitCodes, waitForReady } from './helpers/compose-stack.ts'
import { containerLack, podman, podmanQuietly } from './helpers/podman.ts'
import { containerfileBase, ensureStandInNodeImage } from './helpers/stand-in-node-image.ts'
import { ensureStandInServiceImages } from './helpers/stand-in-service-images.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'

// deploy/compose.yaml run for real, with the README's command line: the service's image built from the
// Containerfile, PostgreSQL and Redis from stand-ins under the names the file uses (no registry here), and
// this machine's podman settings given as a containers.conf, so the file is the one users run.
const REPOSITORY = fileURLToPath(new URL('../', import.meta.url))
const COMPOSE = join(REPOSITORY, 'deploy/compose.yaml')
const PROJECT = 'petstore-compose-test'
const IMAGE = 'localhost/petstore:latest'
const INSTANCES = { 'petstore-1': 'http://127.0.0.1:8081', 'petstore-2': 'http://127.0.0.1:8082' }
const MINUTE = 60_000
// The services find each other by name: podman's CNI networks need the dnsname plugin for that.
const DNS_PLUGINS = [
  '/usr/lib/cni/dnsname',
  '/usr/libexec/podman/aardvark-dns',
  '/usr/lib/podman/aardvark-dns',
]
const lack =
  containerLack(['podman', 'runc', 'debootstrap', 'podman-compose']) ??
  (DNS_PLUGINS.some((path) => existsSync(path))
    ? undefined
    : {
        missing: 'no DNS plugin for podman networks (services cannot reach each other by name)',
        remedy: 'apt-get install golang-github-containernetworking-plugin-dnsname',
      })

/** An API answer on one instance: status, exact text, and the rate-limit counter left. */
async function call(base: string, path: string, key: string, body?: string) {
  const response = await fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, ...(body && { 'content-type': 'application/json' }) },
    body,
    signal: AbortSignal.timeout(10_000),
  })
  const remaining = Number(response.headers.get('ratelimit-remaining'))
  return { status: response.status, text: await response.text(), remaining }
}

async function imageId(name: string): Promise<string | undefined> {
  return podman(['image', 'inspect', '--format', '{{.Id}}', name]).then(
    (id) => id.trim(),
    () => undefined,
  )
}

describe('deploy/compose.yaml, run', {
  ...suiteNeeding('the compose stack suite', lack),
  timeout: 30 * MINUTE,
}, () => {
  const cleanup = suiteCleanup()
  const notes: string[] = []
  let stack: ComposeStack
  let key = ''

  before(
    async () => {
      const base = containerfileBase(readFileSync(join(REPOSITORY, 'Containerfile'), 'utf8'))
      await ensureStandInNodeImage(base, (note) => notes.push(note))
      const images = [...readFileSync(COMPOSE, 'utf8').matchAll(/^ {4}image: (docker\.io\/\S+)$/gm)]
      await ensureStandInServiceImages(
        images.map((match) => match[1] ?? ''),
        (note) => notes.push(note),
      )
      stack = await composeStack(cleanup, COMPOSE, PROJECT)
      const previous = await imageId(IMAGE)
      const started = performance.now()
      await stack.compose(['up', '-d', '--build'], 20 * MINUTE)
      notes.push(`up -d --build in ${((performance.now() - started) / 1000).toFixed(1)} s`)
      // A build that changed something leaves the previous image untagged: remove it, keep the layers.
      if (previous !== undefined && previous !== (await imageId(IMAGE)))
        await podmanQuietly(['rmi', previous])
    },
    { timeout: 25 * MINUTE },
  )

  test("when the stack is up, then both instances are ready on their loopback ports, and PostgreSQL's health check passes", {
    timeout: 5 * MINUTE,
  }, async (t) => {
    for (const note of notes) t.diagnostic(note)
    const started = performance.now()
    for (const [service, base] of Object.entries(INSTANCES))
      await waitForReady(`${base}/readyz`, stack.container(service))
    t.diagnostic(`both ready ${((performance.now() - started) / 1000).toFixed(1)} s after up`)
    // The health check the instances wait on (docker compose) passes on the running database.
    await podman(['healthcheck', 'run', stack.container('postgres')])
    // The service runs with no capability at all, and may gain none (compose's cap_drop, security_opt).
    const status = await podman(['exec', stack.container('petstore-1'), 'cat', '/proc/1/status'])
    assert.match(status, /^CapEff:\s+0{16}$/m, status)
    assert.match(status, /^CapBnd:\s+0{16}$/m, status)
    assert.match(status, /^NoNewPrivs:\s+1$/m, status)
  })

  test('when a key is created in instance 1, then it works on both, and a pet created on 1 reads byte for byte on 2', {
    timeout: 3 * MINUTE,
  }, async () => {
    const out = await stack.compose([
      'exec',
      '-T',
      'petstore-1',
      'node',
      '/app/bin/petstore.js',
      'keys',
      'create',
      '--name',
      'compose-test',
    ])
    key = /^psk_\S+$/m.exec(out)?.[0] ?? ''
    assert.notEqual(key, '', `keys create printed no key:\n${out}`)
    const [one, two] = Object.values(INSTANCES) as [string, string]
    const created = await call(one, '/v1/pets', key, '{"name":"Rex","categoryId":9007199254740993}')
    assert.equal(created.status, 201, created.text)
    assert.match(created.text, /"categoryId":9007199254740993[,}]/)
    const id = /"id":(\d+)/.exec(created.text)?.[1]
    const read = await call(two, `/v1/pets/${id}`, key)
    assert.deepEqual({ status: read.status, text: read.text }, { status: 200, text: created.text })
  })

  test('when requests alternate between the instances, then they count down one rate limit, kept in Redis', {
    timeout: 2 * MINUTE,
  }, async () => {
    assert.notEqual(key, '', 'the key test ran')
    const [one, two] = Object.values(INSTANCES) as [string, string]
    // A request on each, in turn: each sees the other's. A new 60-second window between two starts over.
    for (let attempt = 1; ; attempt++) {
      const answers = []
      for (const base of [one, two, one, two]) answers.push(await call(base, '/v1/pets?limit=1', key))
      const remaining = answers.map((answer) => answer.remaining)
      assert.ok(
        answers.every((answer) => answer.status === 200),
        JSON.stringify(answers),
      )
      const first = remaining[0] ?? 0
      if (remaining.every((left, at) => left === first - at)) return
      assert.ok(
        attempt < 3 && remaining.some((left, at) => at > 0 && left > (remaining[at - 1] ?? 0)),
        `RateLimit-Remaining on instances 1, 2, 1, 2: ${remaining.join(', ')}, not one shared count`,
      )
    }
  })

  test('when podman-compose takes the stack down, then both instances exit 0 on SIGTERM, and nothing is left', {
    timeout: 4 * MINUTE,
  }, async () => {
    const instances = Object.keys(INSTANCES).map((service) => stack.container(service))
    const exited = exitCodes(instances)
    await stack.compose(['down', '-v', '-t', '20'], 3 * MINUTE)
    assert.deepEqual(await exited, [0, 0], '0: drained and closed before the 20 s SIGKILL (137)')
    const left = await podman(['ps', '--all', '--filter', `label=io.podman.compose.project=${PROJECT}`, '-q'])
    assert.equal(left.trim(), '', 'no container left')
    const volumes = await podman([
      'volume',
      'ls',
      '-q',
      '--filter',
      `label=io.podman.compose.project=${PROJECT}`,
    ])
    assert.equal(volumes.trim(), '', 'the database volume removed by down -v')
  })
})
