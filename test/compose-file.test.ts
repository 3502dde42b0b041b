import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { generateApiKey } from '../src/auth/api-key.ts'
import { loadConfig } from '../src/config.ts'
import { ConfigSchema } from '../src/config-schema.ts'
import { podmanQuietly, run } from './helpers/podman.ts'
import { hasCommand, suiteNeeding } from './helpers/suite-requirements.ts'

// What podman-compose makes of the file, without running it: its dry run prints every podman command it
// would run, with the environment interpolated. compose-stack.test.ts runs the file for real.
const DEPLOY = fileURLToPath(new URL('../deploy/', import.meta.url))
const COMPOSE = join(DEPLOY, 'compose.yaml')
const missing = ['podman', 'podman-compose'].filter((command) => !hasCommand(command))
const lack =
  missing.length === 0
    ? undefined
    : { missing: `no ${missing.join(', ')} on this machine`, remedy: `apt-get install ${missing.join(' ')}` }

interface PlannedRun {
  flags: string[]
  env: Record<string, string>
  image: string
}

/** The `podman run` lines of a dry run, by service: `-e NAME=value` pairs apart. */
function plannedRuns(output: string, project: string): Map<string, PlannedRun> {
  const runs = new Map<string, PlannedRun>()
  for (const line of output.split('\n').filter((text) => text.startsWith('podman run '))) {
    const words = line.split(' ')
    const service = /--name=(.+)_1$/.exec(words.find((word) => word.startsWith('--name=')) ?? '')?.[1] ?? ''
    const env: Record<string, string> = {}
    words.forEach((word, at) => {
      const pair = words[at + 1] ?? ''
      if (word === '-e') env[pair.slice(0, pair.indexOf('='))] = pair.slice(pair.indexOf('=') + 1)
    })
    runs.set(service.replace(`${project}_`, ''), { flags: words, env, image: words.at(-1) ?? '' })
  }
  return runs
}

describe('deploy/compose.yaml', suiteNeeding('the compose file check', lack), () => {
  test('when podman-compose plans it, then two read-only instances of the image reach PostgreSQL and Redis by name, with settings the service accepts', async (t) => {
    const project = `petstore-compose-test-${process.pid}`
    // The dry run still creates the project's network and named volume.
    t.after(() => podmanQuietly(['network', 'rm', '--force', `${project}_default`]))
    t.after(() => podmanQuietly(['volume', 'rm', '--force', `${project}_postgres-data`]))
    const compose = (command: string[], env = process.env) =>
      run('podman-compose', ['-p', project, '-f', COMPOSE, '--dry-run', ...command], 60_000, env)
    const key = generateApiKey()
    const runs = plannedRuns(
      await compose(['up', '-d'], { ...process.env, API_KEYS: `local:${key}` }),
      project,
    )
    assert.deepEqual([...runs.keys()].sort(), ['petstore-1', 'petstore-2', 'postgres', 'redis'])

    const builds = (await compose(['build'])).split('\n').filter((line) => line.startsWith('podman build '))
    const [build = ''] = builds
    assert.match(build, /^podman build -t localhost\/petstore:latest -f \.\.\/Containerfile \.\.$/)
    assert.ok(
      existsSync(join(DEPLOY, '../Containerfile')),
      'the build is the repository Containerfile, run in deploy/',
    )

    const postgres = runs.get('postgres')?.env ?? {}
    for (const [number, instance] of ['1', '2'].map((n) => [n, runs.get(`petstore-${n}`)] as const)) {
      assert.ok(instance, `petstore-${number} planned`)
      assert.equal(instance.image, 'localhost/petstore:latest')
      assert.ok(instance.flags.includes('--read-only'), 'read-only root')
      // It binds a port above 1024 and writes nothing outside its volume: no capability, no setuid gain.
      assert.ok(instance.flags.join(' ').includes('--cap-drop ALL'), 'every capability dropped')
      assert.ok(
        instance.flags.join(' ').includes('--security-opt no-new-privileges'),
        'no privileges gained through setuid files',
      )
      assert.ok(instance.flags.join(' ').includes('--tmpfs /tmp'), "a tmpfs for SQLite's temporary files")
      // The image's VOLUME /data would get an anonymous volume each `up`, which `down` leaves behind.
      assert.ok(instance.flags.join(' ').includes('--tmpfs /data'), 'no anonymous volume for /data')
      assert.ok(instance.flags.includes(`127.0.0.1:808${number}:8080`), 'published on loopback')
      const unknown = Object.keys(instance.env).filter((name) => !(name in ConfigSchema.properties))
      assert.deepEqual(unknown, [], 'every variable is a setting')
      assert.doesNotThrow(() => loadConfig(instance.env), 'the service accepts its settings')
      assert.equal(instance.env.API_KEYS, `local:${key}`, "API_KEYS comes from the shell's environment")
      const database = new URL(instance.env.DATABASE_URL ?? '')
      assert.deepEqual(
        [database.hostname, database.username, database.password, database.pathname],
        ['postgres', postgres.POSTGRES_USER, postgres.POSTGRES_PASSWORD, `/${postgres.POSTGRES_DB}`],
      )
      assert.equal(new URL(instance.env.REDIS_URL ?? '').hostname, 'redis')
    }
    // Over TCP, as the server the image runs while it creates the database listens on no address.
    assert.match(
      runs.get('postgres')?.flags.join(' ') ?? '',
      / --healthcheck-command \/bin\/sh -c 'pg_isready --host 127\.0\.0\.1 /,
      'PostgreSQL has a health check for the instances to wait on',
    )
    assert.ok(runs.get('redis')?.flags.join(' ').includes('--tmpfs /data'), "no anonymous volume for Redis'")
    for (const service of ['postgres', 'redis']) {
      assert.ok(
        runs.get(service)?.flags.join(' ').includes(`--network-alias ${service}`),
        `${service} reachable by name`,
      )
    }
  })
})
