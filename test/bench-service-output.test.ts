import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { watchMajorCollections } from '../bench/own-collections.ts'
import { exited } from '../bench/processes.ts'
import { captureOutput, openLogFile, type ServiceOutput } from '../bench/service-output.ts'

// How the bench reads the service's log, on the servers' core: the warning lines kept, however the lines
// are cut into chunks, and nothing allocated per chunk (its own collections would stall the servers).

const directory = mkdtempSync(join(tmpdir(), 'bench-service-output-'))
after(() => rmSync(directory, { recursive: true, force: true }))

// Writes each piece it is sent to its standard output as it stands, and says when it has.
const WRITER = `
const { writeSync } = require('node:fs')
process.on('message', (piece) => { writeSync(1, piece); process.send('written') })
`

const INFO = '{"level":30,"msg":"request completed"}\n'
const PIECES = [
  `${INFO}{"level":4`,
  `0,"msg":"slow disk"}\n${INFO}{"lev`,
  'el":50,"msg":"fatal',
  ' error"}\n',
  `{"level":30,"msg":"${'x'.repeat(100_000)}"}\n{"level":60,"msg":"after a long line"}\n${INFO}`,
]
const WARNINGS =
  '{"level":40,"msg":"slow disk"}\n{"level":50,"msg":"fatal error"}\n{"level":60,"msg":"after a long line"}\n'

function startWriter(stdout: 'pipe' | number): ChildProcess {
  return spawn(process.execPath, ['-e', WRITER], { stdio: ['ignore', stdout, 'pipe', 'ipc'] })
}

async function write(child: ChildProcess, piece: string): Promise<void> {
  child.send(piece)
  await once(child, 'message')
}

async function stop(child: ChildProcess, output: ServiceOutput): Promise<void> {
  child.disconnect()
  await exited(child)
  output.close()
}

test('when warnings are cut across chunks of a pipe, then each is kept whole and no request line is', async () => {
  const child = startWriter('pipe')
  const output = captureOutput(child, undefined)
  let written = 0
  for (const piece of PIECES) {
    await write(child, piece)
    written += Buffer.byteLength(piece)
    // One chunk a piece, as far as the pipe allows: the next is written once this one is read.
    while (output.stdoutBytes() < written) await sleep(5)
  }
  assert.equal(output.output(), WARNINGS)
  assert.equal(output.stdoutBytes(), written)
  await stop(child, output)
})

test('when the file sink is collected between the pieces, then each warning is kept whole and no request line is', async () => {
  const path = join(directory, 'pieces.log')
  const fd = openLogFile(path)
  const child = startWriter(fd)
  const output = captureOutput(child, fd)
  for (const piece of PIECES) {
    await write(child, piece)
    output.collect()
  }
  assert.equal(output.output(), WARNINGS)
  assert.equal(
    output.stdoutBytes(),
    PIECES.reduce((sum, piece) => sum + Buffer.byteLength(piece), 0),
  )
  await stop(child, output)
})

test('when 256 MiB of request lines are read, then the reader starts no major collection', async () => {
  const path = join(directory, 'requests.log')
  const line = `{"level":30,"time":1733500000000,"msg":"request completed","url":"/v1/pets?limit=20"}\n`
  const block = line.repeat(Math.ceil((1024 * 1024) / line.length))
  for (let i = 0; i < 256; i += 1) appendFileSync(path, block)
  const fd = openLogFile(path)
  const child = spawn(process.execPath, ['-e', ''], { stdio: ['ignore', 'ignore', 'pipe'] })
  const output = captureOutput(child, fd)
  const majors = watchMajorCollections()
  output.collect()
  const pausesMs = await majors.stop()
  assert.equal(output.stdoutBytes(), 256 * Buffer.byteLength(block))
  assert.deepEqual(pausesMs, [])
  await exited(child)
  output.close()
})
