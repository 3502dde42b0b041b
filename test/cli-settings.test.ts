import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { CLI, cliEnvironment, runCli, runCommand, startServeProcess } from './helpers/cli-process.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

describe('petstore CLI: settings and what stops a start', () => {
  test('when the configuration is invalid, then exit 78 (a setting to correct) with one line naming the variable', async (t) => {
    const result = await runCli(['migrate'], { SQLITE_BUSY_TIMEOUT_MS: '-5' }, temporaryDirectory(t))
    assert.equal(result.status, 78)
    assert.equal(
      result.stderr,
      'petstore: invalid configuration: SQLITE_BUSY_TIMEOUT_MS must be an integer from 0 to 3600000, written ' +
        'without a plus sign, leading zeros, a fraction or an exponent (got "-5")\n',
    )
  })

  test('when API_KEYS gives a name twice, then serve exits 78 with one line naming it, and stores nothing', async (t) => {
    const cwd = temporaryDirectory(t)
    const [first, second] = [`psk_${'a'.repeat(43)}`, `psk_${'b'.repeat(43)}`]
    const result = await runCli(['serve'], { API_KEYS: `dup:${first},dup:${second}`, PORT: '0' }, cwd)
    assert.equal(result.status, 78)
    assert.equal(
      result.stderr,
      'petstore: invalid configuration: API_KEYS must give each name once: "dup" is given twice\n',
    )
    assert.deepEqual(readdirSync(cwd), [], 'no database was made, no key stored')
  })

  for (const [name, value] of [
    ['HOST', '[::1]'],
    ['HOST', ' '],
    ['HOST', 'a..b'],
    ['METRICS_HOST', 'local host'],
  ]) {
    test(`when ${name} is "${value}", neither an address nor a host name, then serve exits 78 with one line naming it, and makes nothing`, async (t) => {
      const cwd = temporaryDirectory(t)
      const result = await runCli(
        ['serve'],
        { [name as string]: value as string, PORT: '0', METRICS_PORT: '0' },
        cwd,
      )
      assert.equal(result.status, 78)
      assert.match(
        result.stderr,
        new RegExp(
          `^petstore: invalid configuration: ${name} must be an IP address \\(IPv6 without brackets\\) or a host name`,
        ),
      )
      assert.equal(result.stderr.split('\n').length, 2, result.stderr)
      assert.deepEqual(readdirSync(cwd), [], 'no database was made, no key stored')
    })
  }

  for (const host of ['no-such-host.invalid', '999.1.1.1']) {
    test(`when HOST is ${host}, a host name that does not resolve, then serve exits 1 saying so, before a database or key is made`, async (t) => {
      const cwd = temporaryDirectory(t)
      const result = await runCli(['serve'], { HOST: host, PORT: '0', METRICS_PORT: '0' }, cwd)
      assert.equal(result.status, 1)
      assert.ok(
        result.stderr.includes(`cannot listen on HOST:PORT (${host}:0): the host name does not resolve`),
        result.stderr,
      )
      assert.deepEqual(readdirSync(cwd), [], 'no database was made, no key stored')
    })
  }

  test('when .env is a directory (a bind mount of a file that was missing), then a command exits 78 with one line naming it, and makes nothing', async (t) => {
    const cwd = temporaryDirectory(t)
    mkdirSync(join(cwd, '.env'))
    const result = await runCli(['keys', 'list'], {}, cwd)
    assert.equal(result.status, 78, result.stderr)
    assert.equal(
      result.stderr,
      'petstore: invalid configuration: .env is a directory, not a settings file (remove it; a bind mount of a missing file makes one)\n',
    )
    assert.deepEqual(readdirSync(cwd), ['.env'], 'no database was made')
  })

  test('when .env is a FIFO, a symbolic link to a device, or over 1 MiB, then a command exits 78 at once with one line naming it and the rule, and makes nothing; a link to a regular file is read', {
    timeout: 60_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    const env = join(cwd, '.env')
    // A FIFO held every command at its start, waiting for a writer; a link to /dev/zero grew without bound.
    const regular = 'not a settings file: it must be a regular file (or a symbolic link to one)'
    const cases: Array<[() => void, string]> = [
      [() => execFileSync('mkfifo', [env]), `a FIFO (named pipe), ${regular}`],
      [() => symlinkSync('/dev/null', env), `a character device, ${regular}`],
      [
        () => writeFileSync(env, `${'#'.repeat(1024 * 1024)}\n`),
        '1048577 bytes, not a settings file: it may be at most 1 MiB (a settings file is a few KB)',
      ],
    ]
    for (const [make, what] of cases) {
      make()
      const refused = await runCli(['keys', 'list'], {}, cwd, { timeoutMs: 15_000 })
      assert.deepEqual(
        [refused.status, refused.stderr],
        [78, `petstore: invalid configuration: .env is ${what}\n`],
      )
      assert.deepEqual(readdirSync(cwd), ['.env'], 'no database was made')
      rmSync(env)
    }

    mkdirSync(join(cwd, 'settings'))
    writeFileSync(join(cwd, 'settings', 'petstore.env'), 'DATABASE_URL=sqlite:linked.db\n', { mode: 0o600 })
    symlinkSync(join('settings', 'petstore.env'), env)
    const linked = await runCli(['migrate'], {}, cwd)
    assert.equal(linked.status, 0, linked.stderr)
    assert.ok(existsSync(join(cwd, 'linked.db')), "the linked file's DATABASE_URL was read")
  })

  // A quoted YAML value or `-e` kept the space: a second, empty database (and a new key) at "petstore.db ".
  for (const [url, got] of [
    ['sqlite:data/petstore.db ', '" " at its end'],
    [' sqlite:data/petstore.db', '" " at its start'],
    ['postgres://app:s3cret@127.0.0.1:1/pets\t', '"\\t" at its end'],
  ]) {
    test(`when DATABASE_URL is ${JSON.stringify(url)}, with white space around it, then serve exits 78 with one line naming it, and makes nothing`, async (t) => {
      const cwd = temporaryDirectory(t)
      // Where a service already runs: data/ is there.
      mkdirSync(join(cwd, 'data'), { mode: 0o700 })
      const result = await runCli(['serve'], { DATABASE_URL: url as string, PORT: '0' }, cwd)
      assert.equal(result.status, 78, result.stderr)
      assert.equal(
        result.stderr,
        `petstore: invalid configuration: DATABASE_URL must not begin or end with white space (got ${got})\n`,
      )
      assert.deepEqual(readdirSync(join(cwd, 'data')), [], 'no database was made, no key stored')
    })
  }

  test('when .env sets what is no setting, or other users can read the key it holds, then each command says so at warn, and runs', async (t) => {
    const directory = temporaryDirectory(t)
    const path = join(directory, '.env')
    const key = `psk_${'a'.repeat(43)}`
    writeFileSync(
      path,
      `API_KEYS=ops:${key}\nPGPASSWORD=secret\nNODE_EXTRA_CA_CERTS=/etc/ca.pem\nPROT=9090\n`,
    )
    chmodSync(path, 0o644)
    const warned = (stderr: string) =>
      stderr
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .filter((line) => line.level === 40)
        .map((line) => line.msg)
    const first = await runCli(['migrate'], {}, directory)
    assert.equal(first.status, 0, first.stderr)
    const said = warned(first.stderr)
    for (const name of ['PGPASSWORD', 'NODE_EXTRA_CA_CERTS', 'PROT']) {
      assert.ok(
        said.some((msg) => msg.startsWith(`.env sets ${name}, which is no setting of this service`)),
        `${name}: ${said.join(' | ')}`,
      )
    }
    assert.ok(
      said.some((msg) =>
        /^\.env holds API_KEYS, PGPASSWORD, and other users can read it \(mode 0644\): chmod 600/.test(msg),
      ),
    )
    assert.equal(first.stderr.includes(key.slice(4)), false, 'the key itself is never said')

    writeFileSync(path, `API_KEYS=ops:${key}\n`)
    chmodSync(path, 0o600)
    const second = await runCli(['migrate'], {}, directory)
    assert.equal(second.status, 0, second.stderr)
    assert.deepEqual(warned(second.stderr), [])
  })

  test('when .env begins with a byte order mark (UTF-8 as editors on Windows save it), then its first setting is read, and nothing is said of it', async (t) => {
    const cwd = temporaryDirectory(t)
    writeFileSync(join(cwd, '.env'), '\uFEFFDATABASE_URL=sqlite:other.db\n', { mode: 0o600 })
    const result = await runCli(['migrate'], {}, cwd)
    assert.equal(result.status, 0, result.stderr)
    assert.equal(
      result.stderr,
      `petstore migrate: no database was at ${join(cwd, 'other.db')}; created a new one\n`,
    )
    assert.equal(existsSync(join(cwd, 'data')), false, 'not the default database')
  })

  test('when the database is unreachable at start, then exit 1 with one line and no password', async (t) => {
    const result = await runCli(
      ['serve'],
      { DATABASE_URL: 'postgres://app:s3cret@127.0.0.1:1/pets' },
      temporaryDirectory(t),
    )
    assert.equal(result.status, 1)
    assert.match(result.stderr, /^petstore serve: the database is unreachable: .*ECONNREFUSED.*\n$/)
    assert.equal(result.stderr.includes('s3cret'), false)
  })

  test("when a listener's port is taken, its address is not this machine's or its host does not resolve, then serve exits 1 with one line naming its settings", async (t) => {
    const cwd = temporaryDirectory(t)
    const first = await startServeProcess({}, cwd)
    t.after(() => first.child.kill('SIGKILL'))
    const port = new URL(first.origin).port
    const taken = await runCli(['serve'], { PORT: port, API_KEYS: '' }, cwd)
    assert.deepEqual(
      [taken.status, taken.stderr],
      [
        1,
        `petstore serve: cannot listen on HOST:PORT (127.0.0.1:${port}): the port is in use (EADDRINUSE); a second instance on this machine needs a PORT and a METRICS_PORT of its own (or METRICS=off)\n`,
      ],
    )
    const metricsTaken = await runCli(['serve'], { PORT: '0', METRICS_PORT: port, API_KEYS: '' }, cwd)
    assert.deepEqual(
      [metricsTaken.status, metricsTaken.stderr],
      [
        1,
        `petstore serve: cannot listen on METRICS_HOST:METRICS_PORT (127.0.0.1:${port}): the port is in use (EADDRINUSE); a second instance on this machine needs a PORT and a METRICS_PORT of its own (or METRICS=off)\n`,
      ],
    )
    // 192.0.2.1 is kept for documentation (RFC 5737): no machine has it.
    const elsewhere = await runCli(['serve'], { PORT: '0', METRICS_HOST: '192.0.2.1', API_KEYS: '' }, cwd)
    assert.deepEqual(
      [elsewhere.status, elsewhere.stderr],
      [
        1,
        'petstore serve: cannot listen on METRICS_HOST:METRICS_PORT (192.0.2.1:0): the address is not one of this machine (EADDRNOTAVAIL)\n',
      ],
    )
    const unknownHost = await runCli(['serve'], { PORT: '0', METRICS_HOST: 'no-such-host.invalid' }, cwd)
    assert.equal(unknownHost.status, 1)
    assert.match(
      unknownHost.stderr,
      /^petstore serve: cannot listen on METRICS_HOST:METRICS_PORT \(no-such-host\.invalid:\d+\): the host name (does not resolve \(ENOTFOUND\)|could not be resolved now \(EAI_AGAIN\))\n$/,
    )
  })

  test('when serve fails to start after logging (a first start writes its key file, then the port is taken), then the lines logged come out before the one saying why it stopped, which is last', async (t) => {
    const cwd = temporaryDirectory(t)
    const first = await startServeProcess({ API_KEYS: '' }, cwd)
    t.after(() => first.child.kill('SIGKILL'))
    const port = new URL(first.origin).port
    // Both streams into one pipe, as a terminal shows them: their order is the order they were written.
    const env = cliEnvironment({ PORT: port, DATABASE_URL: `sqlite:${join(cwd, 'other.db')}` })
    const both = await runCommand('/bin/sh', ['-c', 'exec "$0" "$1" serve 2>&1', process.execPath, CLI], {
      env,
      cwd,
    })
    assert.equal(both.status, 1)
    const lines = both.stdout.trimEnd().split('\n')
    assert.match(lines[0] ?? '', /"msg":"no API key existed: created one and wrote it to this file/)
    assert.equal(
      lines.at(-1),
      `petstore serve: cannot listen on HOST:PORT (127.0.0.1:${port}): the port is in use (EADDRINUSE); a second instance on this machine needs a PORT and a METRICS_PORT of its own (or METRICS=off)`,
    )
  })
})
