import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { hostPausesNote, watchPauses } from '../bench/host-pauses.ts'

// The bench's probe of the host's own pauses, made to see one: its process stopped, as a host stops a core.

test('when the probe is stopped for 200 ms, then it reports a jump of about that long', async () => {
  const { pid, pauses } = watchPauses(0, 1.5)
  assert.ok(pid !== undefined)
  await sleep(400)
  process.kill(pid, 'SIGSTOP')
  await sleep(200)
  process.kill(pid, 'SIGCONT')
  const jumps = await pauses
  assert.ok(
    jumps.some((ms) => ms >= 180 && ms < 1500),
    `jumps: ${jumps.join(', ')}`,
  )
})

test('when the host is probed, then the note says, for each core, how often and how long it paused, and over how long', async () => {
  const note = await hostPausesNote(0.5)
  assert.match(
    note,
    /^Host pauses: .* core 0 (never|(once|twice|\d+ times) \(\d+–\d+ ms\)), core 1 (never|(once|twice|\d+ times) \(\d+–\d+ ms\)) in 0\.5 s\./,
  )
})
