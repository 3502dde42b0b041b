import assert from 'node:assert/strict'
import { test } from 'node:test'
import { runNodeForJson } from '../bench/processes.ts'

// The bench's one way to run a pinned node child and read its answer: the load generator and the host probe.

test('when the child prints lines and then JSON, then the last line is its value', async () => {
  const { pid, result } = runNodeForJson<{ ok: number }>(
    1,
    ['-e', 'console.log("warming"); console.log(JSON.stringify({ ok: 7 }))'],
    'child',
  )
  assert.ok(pid !== undefined)
  assert.deepEqual(await result, { ok: 7 })
})

test('when the child exits with an error, then the promise fails with its name, exit code and standard error', async () => {
  const { result } = runNodeForJson(
    1,
    ['-e', 'console.error("the disk is full"); process.exit(3)'],
    'load generator',
  )
  await assert.rejects(result, /^Error: load generator failed \(3\):\nthe disk is full/)
})

test('when the child exits cleanly without JSON, then the promise fails saying it printed no result', async () => {
  const { result } = runNodeForJson(1, ['-e', 'console.log("half a {")'], 'host-pause probe')
  await assert.rejects(result, /host-pause probe printed no result:\nhalf a \{/)
})
