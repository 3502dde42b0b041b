import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const GUARD = fileURLToPath(new URL('./helpers/open-handles-guard.ts', import.meta.url))
const FIXTURE = fileURLToPath(new URL('./fixtures/open-handle.fixture.ts', import.meta.url))

describe('a test file that holds the event loop after its tests', () => {
  test('when its tests pass but a timer is left running, then npm test fails the file, naming what it holds, instead of hanging', () => {
    const run = spawnSync(process.execPath, ['--import', GUARD, '--test', '--test-reporter=tap', FIXTURE], {
      env: { PATH: process.env.PATH ?? '', OPEN_HANDLES_GRACE_MS: '500' },
      encoding: 'utf8',
      timeout: 20_000,
      killSignal: 'SIGKILL',
    })
    assert.equal(run.error, undefined, 'the run hung: the guard did not end the file')
    assert.equal(run.status, 1, run.stdout)
    assert.match(run.stdout + run.stderr, /still holds: .*Timeout/)
    // Every verdict the file gave is still reported (Node's --test-force-exit could drop some).
    assert.match(run.stdout, /^# pass 21$/m)
  })
})
