import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCli } from './helpers/cli-process.ts'

// How the command line reads its arguments: what it refuses, and how it says so (exit 2, one line).
describe('petstore CLI usage', () => {
  test('when --version or --help comes with more, then the more is refused in one line, exit 2; "--help <command>" is that command\'s help', (t) => {
    const cwd = temporaryDirectory(t)
    for (const [args, extra] of [
      [['--version', '--foo'], '--foo'],
      [['-v', 'seed'], 'seed'],
      [['--help', 'seed', '--count'], '--count'],
      [['--help', 'nothing'], 'nothing'],
    ] as const) {
      const result = runCli([...args], {}, cwd)
      assert.deepEqual(
        [result.status, result.stdout, result.stderr],
        [2, '', `petstore: ${args[0]} takes no "${extra}" (see "petstore --help")\n`],
        args.join(' '),
      )
    }
    for (const args of [
      ['--help', 'seed'],
      ['help', 'seed'],
      ['-h', 'seed'],
    ]) {
      const result = runCli(args, {}, cwd)
      assert.equal(result.status, 0, args.join(' '))
      assert.match(result.stdout, /^Usage: petstore seed \[--count N\]/, args.join(' '))
    }
  })

  test('when an option is followed by what starts with a dash, then the line names it and says how to write such a value, exit 2', (t) => {
    const cwd = temporaryDirectory(t)
    // A forgotten value: the next option is named as what was read.
    const forgotten = runCli(['backup', '--to', '--force'], {}, cwd)
    assert.equal(forgotten.status, 2)
    assert.match(
      forgotten.stderr,
      /^petstore backup: --to needs a value, and "--force" after it reads as an option /,
    )
    const result = runCli(['seed', '--count', '5', '--count', '-5'], {}, cwd)
    assert.deepEqual(
      [result.status, result.stderr],
      [
        2,
        'petstore seed: --count needs a value, and "-5" after it reads as an option (to give a value that starts with "-", write --count=-5) (see "petstore seed --help")\n',
      ],
    )
  })

  test('when an option that takes a value is given twice, or a key named both ways, then nothing is done and the line says so, exit 2', async (t) => {
    const cwd = temporaryDirectory(t)
    for (const [args, line] of [
      [['seed', '--count', '1', '--count', '2'], '--count is given twice ("1", then "2"): give it once'],
      [['backup', '--to', 'a.db', '--to=b.db'], '--to is given twice ("a.db", then "b.db"): give it once'],
      [
        ['keys', 'create', '--name', 'x', '--name', 'y'],
        '--name is given twice ("x", then "y"): give it once',
      ],
      [
        ['keys', 'revoke', 'a', '--name', 'b'],
        'revoke takes the name once, as "petstore keys revoke <name>" (got "a" and --name "b")',
      ],
    ] as const) {
      const command = args[0] === 'keys' ? 'keys' : args[0]
      const result = runCli([...args], {}, cwd)
      assert.deepEqual(
        [result.status, result.stdout, result.stderr],
        [2, '', `petstore ${command}: ${line} (see "petstore ${command} --help")\n`],
        args.join(' '),
      )
    }
    assert.equal(existsSync(join(cwd, 'data')), false, 'no command ran')
  })
})
