import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { parseEnv } from 'node:util'
import { loadConfig } from '../src/config.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCli } from './helpers/cli-process.ts'
import { nodeFlagsOf, npmStartNodeFlags, npmStartScript } from './helpers/npm-start-flags.ts'
import { hasCommand, suiteNeeding } from './helpers/suite-requirements.ts'

// Checked, not run: systemd is not PID 1 on the machines that run the tests.
const UNIT = fileURLToPath(new URL('../deploy/petstore.service', import.meta.url))
const unit = readFileSync(UNIT, 'utf8')
const lack = hasCommand('systemd-analyze')
  ? undefined
  : { missing: 'no systemd-analyze on this machine', remedy: 'apt-get install systemd' }

function directive(name: string): string[] {
  return [...unit.matchAll(new RegExp(`^${name}=(.*)$`, 'gm'))].map((match) => match[1] ?? '')
}

describe('deploy/petstore.service', suiteNeeding('the systemd unit checks', lack), () => {
  test('when systemd-analyze verifies it, then it finds nothing to say', (t) => {
    // verify checks that ExecStart's program exists: the unit's node in /opt becomes this machine's.
    const [program = ''] = (directive('ExecStart')[0] ?? '').split(' ')
    assert.match(program, /^\/opt\/petstore\/.+\/node$/)
    const copy = join(temporaryDirectory(t), 'petstore.service')
    writeFileSync(copy, unit.replace(`ExecStart=${program} `, `ExecStart=${process.execPath} `))
    const verify = spawnSync('systemd-analyze', ['verify', copy], { encoding: 'utf8', timeout: 60_000 })
    assert.equal(verify.status, 0, verify.stderr)
    assert.equal(
      `${verify.stdout}${verify.stderr}`,
      '',
      'no warning either (an unknown or misspelt key is only a warning)',
    )
  })

  test('when its hardening is scored, then the exposure stays at 2.5 or below', () => {
    const security = spawnSync('systemd-analyze', ['security', '--offline=true', '--threshold=25', UNIT], {
      encoding: 'utf8',
      timeout: 60_000,
    })
    assert.equal(security.status, 0, security.stdout.split('\n').slice(-3).join('\n'))
  })
})

// Read, not run: needs no systemd at all.
describe('deploy/petstore.service, as text', () => {
  test('when it stops the service, then SIGTERM comes first and SIGKILL only after the service has had its time, and a refused setting is not restarted', async (t) => {
    assert.deepEqual(directive('KillSignal'), ['SIGTERM'])
    const stopSeconds = Number(/^(\d+)s$/.exec(directive('TimeoutStopSec')[0] ?? '')?.[1])
    // With the settings it is installed with: the delay, the service's own bound, and the WORKERS
    // supervisor's 5 s and 1 s for the workers' last output (README, "Operating").
    const { server } = loadConfig(
      parseEnv(readFileSync(new URL('../deploy/production.env', import.meta.url), 'utf8')),
    )
    const worst = server.shutdownDelayMs + server.shutdownTimeoutMs + 5000 + 1000
    assert.ok(stopSeconds * 1000 > worst, `TimeoutStopSec=${stopSeconds}s, the stop's worst ${worst} ms`)
    // Restarted whenever it ends, but for a setting refused (petstore's own exit code for it).
    assert.deepEqual(directive('Restart'), ['always'])
    const refused = await runCli(['migrate'], { PORT: 'none' }, temporaryDirectory(t))
    assert.deepEqual(directive('RestartPreventExitStatus'), [String(refused.status)])
    assert.deepEqual(directive('EnvironmentFile'), ['/etc/petstore/petstore.env'])
    assert.deepEqual(directive('DynamicUser'), ['yes'])
    assert.deepEqual(directive('StateDirectory'), ['petstore'])
  })

  test('when it starts the service, then node runs with the flags and the malloc arenas npm start gives', () => {
    assert.deepEqual(nodeFlagsOf(directive('ExecStart')[0] ?? ''), npmStartNodeFlags())
    assert.match(npmStartScript(), /^MALLOC_ARENA_MAX=\$\{MALLOC_ARENA_MAX:-2\} /)
    assert.ok(directive('Environment').includes('MALLOC_ARENA_MAX=2'), directive('Environment').join(', '))
  })

  test("when the README's steps install the release, then the node the unit runs is the one they put there, at the project's version", () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    const install = /^sudo npm install --prefix (\S+) .*\bnode-linux-x64@(\S+)/m.exec(readme)
    assert.ok(install, 'the README installs a Node.js for the unit')
    const [, prefix, version] = install
    // The unit runs the release /opt/petstore links to: the steps install into $RELEASE, then link it.
    assert.match(readme, /^sudo ln -sfn \$RELEASE \/opt\/petstore\s/m)
    assert.equal(
      directive('ExecStart')[0]?.split(' ')[0],
      `${prefix?.replace('$RELEASE', '/opt/petstore')}/node_modules/.bin/node`,
    )
    const { devDependencies } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
    assert.equal(version, devDependencies.node)
  })

  test('when the service fails at start again and again (its database down at boot), or a stray signal stops it with exit 0, then systemd keeps restarting it rather than give up', () => {
    // `systemctl stop` still stops it: Restart= never applies to a stop systemd was asked for.
    assert.deepEqual(directive('Restart'), ['always'])
    // systemd's default start limit (5 starts in 10 s) would leave the unit failed for good within seconds.
    assert.deepEqual(directive('StartLimitIntervalSec'), ['0'])
    assert.ok(Number(/^(\d+)s$/.exec(directive('RestartSec')[0] ?? '')?.[1]) >= 1, 'a pause between starts')
  })

  test('when it logs a line per request to the journal, then journald drops none of them for its rate limit, and tags them petstore', () => {
    // journald's default, 10,000 lines in 30 s per unit (a few times that with much free disk), is a few
    // hundred to a few thousand requests a second.
    assert.deepEqual(directive('LogRateLimitIntervalSec'), ['0'])
    assert.deepEqual(directive('SyslogIdentifier'), ['petstore'])
  })
})
