import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { suiteCleanup } from './helpers/cleanup.ts'
import { containerLack, podmanQuietly } from './helpers/podman.ts'
import { ensureStandInServiceImages } from './helpers/stand-in-service-images.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { bootedState, startMachine, VM_IMAGE as VM } from './helpers/systemd-machine.ts'

// The wait the systemd unit's suite makes for its machine to boot, on a machine slow to boot (as a busy one
// is): until systemd is up, `systemctl` says "offline", which is no state the machine booted to.
const MINUTE = 60_000

describe('waiting for a machine that boots systemd', {
  ...suiteNeeding('the systemd boot wait', containerLack(['podman', 'runc', 'debootstrap'])),
  timeout: 20 * MINUTE,
}, () => {
  const cleanup = suiteCleanup()

  test('when systemd comes up late as PID 1, then the wait asks again until it has booted, and says running', {
    timeout: 20 * MINUTE,
  }, async () => {
    await ensureStandInServiceImages([VM], () => undefined)
    const container = `petstore-test-late-boot-${process.pid}`
    cleanup.after(() => podmanQuietly(['rm', '--force', '--time', '0', container]))
    // PID 1 is a shell for two seconds, then becomes systemd: the window a busy machine opens by chance.
    await startMachine(container, VM, ['--entrypoint', 'sh'], ['-c', 'sleep 2; exec /sbin/init'])
    assert.equal(await bootedState(container, MINUTE), 'running')
  })
})
