import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'

// The report's line on the bench's own major collections, which share the servers' core.

const MODULE = new URL('../bench/own-collections.ts', import.meta.url).href

function noteAfter(collections: number, flags: string[] = []): string {
  const script = `
    const { ownCollectionsNote, watchMajorCollections } = await import(${JSON.stringify(MODULE)})
    const watch = watchMajorCollections()
    for (let i = 0; i < ${collections}; i += 1) globalThis.gc()
    process.stdout.write(ownCollectionsNote(await watch.stop()))
  `
  const child = spawnSync(process.execPath, ['--expose-gc', ...flags, '--input-type=module', '-e', script], {
    encoding: 'utf8',
  })
  assert.equal(child.status, 0, child.stderr)
  return child.stdout
}

test('when the process runs no major collection, then the line says so', () => {
  assert.equal(
    noteAfter(0),
    "The bench's own process ran no major collection from the first engine's start to the last one's end.",
  )
})

test('when it runs two, then the line counts them and names the flags its heap was started with', () => {
  const note = noteAfter(2, ['--initial-old-space-size=128'])
  assert.match(
    note,
    /^The bench's own process \(started with `--initial-old-space-size=128`\) ran 2 major collection\(s\) .*the longest final pause \d+\.\d ms/,
  )
})
