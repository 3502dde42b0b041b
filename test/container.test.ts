import assert from 'node:assert/strict'
import { chownSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { generateApiKey } from '../src/auth/api-key.ts'
import { suiteCleanup, temporaryDirectory } from './helpers/cleanup.ts'
import { type RunningContainer, startContainer, stopContainer } from './helpers/container-run.ts'
import { npmStartNodeFlags } from './helpers/npm-start-flags.ts'
import { containerLack, podman, podmanQuietly, RUNTIME_FLAGS, run } from './helpers/podman.ts'
import { containerfileBase, ensureStandInNodeImage } from './helpers/stand-in-node-image.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'

// The image as a user builds it from the Containerfile, on a stand-in for the official base (no registry is
// reachable here): built once, then run the way the README runs it. The first run on a machine assembles
// the stand-in with debootstrap; later runs reuse it, and podman's layer cache.
const REPOSITORY = fileURLToPath(new URL('../', import.meta.url))
const IMAGE = 'localhost/petstore:container-test'
const PROBE = fileURLToPath(new URL('helpers/type-stripper-probe.mjs', import.meta.url))
const MINUTE = 60_000
// The entry point runs node as npm start does.
const NODE_FLAGS = npmStartNodeFlags()
const lack = containerLack(['podman', 'runc', 'debootstrap'])

async function imageId(name: string): Promise<string | undefined> {
  return podman(['image', 'inspect', '--format', '{{.Id}}', name]).then(
    (id) => id.trim(),
    () => undefined,
  )
}

/** The exact text of an API answer, with its status. */
async function call(container: RunningContainer, path: string, key: string, body?: string) {
  const response = await fetch(`${container.api}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, ...(body && { 'content-type': 'application/json' }) },
    body,
    signal: AbortSignal.timeout(10_000),
  })
  return { status: response.status, text: await response.text() }
}

describe('the container image', {
  ...suiteNeeding('the container image suite', lack),
  timeout: 30 * MINUTE,
}, () => {
  const cleanup = suiteCleanup()
  const notes: string[] = []
  let baseName = ''

  before(
    async () => {
      const base = containerfileBase(readFileSync(join(REPOSITORY, 'Containerfile'), 'utf8'))
      baseName = base.name
      await ensureStandInNodeImage(base, (note) => notes.push(note))
      const previous = await imageId(IMAGE)
      const started = performance.now()
      await podman(['build', '--pull=never', '--runtime', 'runc', '--tag', IMAGE, REPOSITORY], 15 * MINUTE)
      notes.push(`image built in ${((performance.now() - started) / 1000).toFixed(1)} s`)
      // Each build that changed something leaves the previous image untagged: remove it, keep the layers.
      if (previous !== undefined && previous !== (await imageId(IMAGE)))
        await podmanQuietly(['rmi', previous])
    },
    { timeout: 25 * MINUTE },
  )

  test('when the image is built, then it holds the service and its production dependencies only, with a warm compile cache, for a non-root user', {
    timeout: 2 * MINUTE,
  }, async (t) => {
    for (const note of notes) t.diagnostic(note)
    const config = JSON.parse(await podman(['image', 'inspect', '--format', '{{json .Config}}', IMAGE]))
    assert.equal(config.User, '1000:1000')
    assert.deepEqual(config.Entrypoint, ['node', ...NODE_FLAGS, '/app/bin/petstore.js'])
    assert.deepEqual(config.Cmd, ['serve'])
    for (const setting of [
      'HOST=0.0.0.0',
      'METRICS_HOST=0.0.0.0',
      'DATABASE_URL=sqlite:/data/petstore.db',
      'MALLOC_ARENA_MAX=2',
    ]) {
      assert.ok(config.Env.includes(setting), `${setting} in ${config.Env}`)
    }
    assert.deepEqual(Object.keys(config.Volumes), ['/data'])
    const sizes = await Promise.all(
      [IMAGE, baseName].map((name) => podman(['image', 'inspect', '--format', '{{.Size}}', name])),
    )
    const [size = 0, baseSize = 0] = sizes.map(Number)
    t.diagnostic(
      `image ${(size / 1e6).toFixed(0)} MB, ${((size - baseSize) / 1e6).toFixed(1)} MB over its base`,
    )

    const root = (await podman(['image', 'mount', IMAGE])).trim()
    t.after(() => podmanQuietly(['image', 'unmount', IMAGE]))
    assert.deepEqual(readdirSync(join(root, 'app')).sort(), ['bin', 'node_modules', 'package.json', 'src'])
    const modules = readdirSync(join(root, 'app/node_modules'))
    assert.ok(modules.includes('fastify'))
    for (const absent of ['node', 'typescript', '@biomejs', 'fast-check', 'petstore-client-generator']) {
      assert.ok(!modules.includes(absent), `${absent} is a development package`)
    }
    const cache = join(root, 'app/node_modules/.cache/petstore')
    const cached = readdirSync(cache, { recursive: true, encoding: 'utf8' })
    assert.ok(cached.length > 0, 'compile cache written')
    // Compiled code the service loads: root's, as the code is, or a compromised process could plant its own.
    for (const entry of ['', ...cached]) {
      const { uid, mode } = statSync(join(cache, entry))
      assert.ok(
        uid === 0 && (mode & 0o022) === 0,
        `${entry || 'the cache'}: uid ${uid}, mode ${mode.toString(8)}`,
      )
    }
    assert.ok(!existsSync(join(root, 'usr/local/lib/node_modules/npm')), 'no npm at run time')
    assert.equal(statSync(join(root, 'data')).uid, 1000)
    assert.equal(statSync(join(root, 'app/src')).uid, 0, "the code is root's, read-only to the service")
  })

  test('when run on a read-only root, then it serves an exact int64, stops on SIGTERM with 0, and a new container on the volume serves the pet, warm', {
    timeout: 8 * MINUTE,
  }, async (t) => {
    const volume = `petstore-test-${process.pid}`
    await podman(['volume', 'create', volume])
    cleanup.after(() => podmanQuietly(['volume', 'rm', '--force', volume]))
    const key = generateApiKey()
    const first = await startContainer(t, IMAGE, volume, { API_KEYS: `container-test:${key}` })

    const created = await call(
      first,
      '/v1/pets',
      key,
      '{"name":"Rex","categoryId":9007199254740993,"status":"available"}',
    )
    assert.equal(created.status, 201, created.text)
    assert.match(created.text, /"categoryId":9007199254740993[,}]/)
    const id = /"id":(\d+)/.exec(created.text)?.[1]
    assert.deepEqual(await call(first, `/v1/pets/${id}`, key), { status: 200, text: created.text })
    const metrics = await fetch(`${first.metrics}/metrics`, { signal: AbortSignal.timeout(10_000) })
    assert.match(await metrics.text(), /^petstore_pets_created_total 1$/m, 'metrics reachable from outside')

    const pid1 = await podman(['exec', first.name, 'cat', '/proc/1/cmdline', '/proc/1/status'])
    assert.match(
      pid1,
      new RegExp(`^node\0${NODE_FLAGS.join('\0')}\0/app/bin/petstore\\.js\0serve\0`),
      'the service is PID 1',
    )
    assert.match(pid1, /^Uid:\s+1000\s/m)
    await assert.rejects(
      podman(['exec', first.name, 'touch', '/app/written', '/tmp/written']),
      /'\/app\/written': Read-only file system\n.*'\/tmp\/written': Read-only file system/,
    )

    // 0 means drained and closed within SHUTDOWN_TIMEOUT_MS + 2 s (else the service exits 1) and before
    // podman's SIGKILL at 20 s (137).
    const stopped = await stopContainer(first)
    t.diagnostic(`first container stopped in ${stopped.seconds.toFixed(1)} s`)
    assert.equal(stopped.exitCode, 0, await first.logs())
    assert.match(await first.logs(), /"signal":"SIGTERM","msg":"shutting down"/)

    const probe = { NODE_OPTIONS: '--import=/probe/type-stripper-probe.mjs' }
    const second = await startContainer(t, IMAGE, volume, probe, [
      `${PROBE}:/probe/type-stripper-probe.mjs:ro`,
    ])
    assert.deepEqual(await call(second, `/v1/pets/${id}`, key), { status: 200, text: created.text })
    assert.equal((await stopContainer(second)).exitCode, 0, await second.logs())
    const logs = await second.logs()
    assert.match(logs, /^compile cache: \/app\/node_modules\/\.cache\/petstore\//m)
    assert.match(
      logs,
      /^type stripper loaded: false$/m,
      'a fresh container starts on the compile cache built in',
    )
  })

  test("when a container runs on PostgreSQL, or runs any other command, then it loads no type stripper either: the image's compile cache holds the PostgreSQL store and every command", {
    timeout: 2 * MINUTE,
  }, async () => {
    // `migrate` opens the store as `serve` does; nothing listens on port 9, so it stops there, exit 1. Each
    // command loads its own modules (src/cli/run-cli.ts), which its --help loads too. The entry point's flags.
    const petstore = `node ${NODE_FLAGS.join(' ')} /app/bin/petstore.js`
    const output = await run('sh', [
      '-c',
      'podman run --rm "$@" 2>&1; echo "exit $?"',
      'sh',
      ...RUNTIME_FLAGS,
      '--read-only',
      '--volume',
      `${PROBE}:/probe/type-stripper-probe.mjs:ro`,
      '--env',
      'NODE_OPTIONS=--import=/probe/type-stripper-probe.mjs',
      '--env',
      'DATABASE_URL=postgres://petstore:unused@127.0.0.1:9/petstore',
      '--entrypoint',
      'sh',
      IMAGE,
      '-c',
      `${petstore} migrate; echo "migrate exit $?"; for command in keys seed backup restore copy openapi; do ${petstore} "$command" --help >/dev/null || echo "$command failed"; done`,
    ])
    assert.match(output, /^petstore migrate: the database is unreachable/m, output)
    assert.match(output, /^migrate exit 1$/m, output)
    assert.equal(output.match(/^type stripper loaded: false$/gm)?.length, 7, output)
    assert.doesNotMatch(output, /type stripper loaded: true| failed$/m, output)
  })

  test("when the README's backup command runs while it serves and its restore once it is stopped, then a new container serves what the backup held", {
    timeout: 4 * MINUTE,
  }, async (t) => {
    const volume = `petstore-test-${process.pid}-backups`
    await podman(['volume', 'create', volume])
    cleanup.after(() => podmanQuietly(['volume', 'rm', '--force', volume]))
    const backups = temporaryDirectory(t)
    chownSync(backups, 1000, 1000)
    const key = generateApiKey()
    const env = { API_KEYS: `backups:${key}` }
    const command = (readOnly: string, args: string[]) =>
      podman([
        'run',
        '--rm',
        ...RUNTIME_FLAGS,
        '-v',
        `${volume}:/data`,
        '-v',
        `${backups}:/backups${readOnly}`,
        IMAGE,
        ...args,
      ])

    const serving = await startContainer(t, IMAGE, volume, env)
    const kept = await call(serving, '/v1/pets', key, '{"name":"Kept","categoryId":1}')
    assert.equal(kept.status, 201, kept.text)
    assert.match(await command('', ['backup', '--to', '/backups/petstore-1.db']), /^backed up 1 pet to /)
    const later = await call(serving, '/v1/pets', key, '{"name":"Later","categoryId":1}')
    assert.equal(later.status, 201, later.text)
    assert.equal((await stopContainer(serving)).exitCode, 0, await serving.logs())

    assert.match(
      await command(':ro', ['restore', '--from', '/backups/petstore-1.db']),
      /^restored 1 pet from /,
    )
    const restored = await startContainer(t, IMAGE, volume, env)
    const id = (text: string) => /"id":(\d+)/.exec(text)?.[1]
    assert.deepEqual(await call(restored, `/v1/pets/${id(kept.text)}`, key), { status: 200, text: kept.text })
    assert.equal((await call(restored, `/v1/pets/${id(later.text)}`, key)).status, 404)
    assert.equal((await stopContainer(restored)).exitCode, 0, await restored.logs())
  })

  test('when the service may open only the socket families the systemd unit allows, then it starts and serves on 0.0.0.0, with workers too', {
    timeout: 4 * MINUTE,
  }, async (t) => {
    const profile = join(temporaryDirectory(t), 'unit-address-families.json')
    writeFileSync(profile, JSON.stringify(seccompAllowingOnly(unitAddressFamilies())))
    const volume = `petstore-test-${process.pid}-families`
    await podman(['volume', 'create', volume])
    cleanup.after(() => podmanQuietly(['volume', 'rm', '--force', volume]))
    const key = generateApiKey()
    for (const workers of ['1', '2']) {
      const container = await startContainer(
        t,
        IMAGE,
        volume,
        { API_KEYS: `families:${key}`, WORKERS: workers },
        [],
        ['--security-opt', `seccomp=${profile}`],
      )
      assert.equal((await call(container, '/v1/pets', key)).status, 200, await container.logs())
      assert.equal((await stopContainer(container)).exitCode, 0, await container.logs())
    }
  })
})

// Linux's numbers for the address families a unit may name (include/linux/socket.h).
const ADDRESS_FAMILIES: Record<string, number> = {
  AF_UNIX: 1,
  AF_INET: 2,
  AF_INET6: 10,
  AF_NETLINK: 16,
  AF_PACKET: 17,
}
const HIGHEST_FAMILY = 45

/** The families deploy/petstore.service's RestrictAddressFamilies= allows. */
function unitAddressFamilies(): number[] {
  const unit = readFileSync(join(REPOSITORY, 'deploy/petstore.service'), 'utf8')
  const names = /^RestrictAddressFamilies=(.+)$/m.exec(unit)?.[1]?.trim().split(/\s+/) ?? []
  assert.ok(names.length > 0, 'the unit restricts address families')
  return names.map((name) => {
    const family = ADDRESS_FAMILIES[name]
    assert.ok(family !== undefined, `a known address family: ${name}`)
    return family
  })
}

/**
 * A seccomp profile that refuses `socket()` in every other family, as systemd does for a unit with
 * RestrictAddressFamilies= (EAFNOSUPPORT).
 */
function seccompAllowingOnly(families: number[]) {
  const refused = Array.from({ length: HIGHEST_FAMILY + 1 }, (_, family) => family).filter(
    (family) => !families.includes(family),
  )
  return {
    defaultAction: 'SCMP_ACT_ALLOW',
    syscalls: refused.map((family) => ({
      names: ['socket'],
      action: 'SCMP_ACT_ERRNO',
      errnoRet: 97,
      args: [{ index: 0, value: family, valueTwo: 0, op: 'SCMP_CMP_EQ' }],
    })),
  }
}
