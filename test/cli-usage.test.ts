import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { runCli } from './helpers/cli-process.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

const REPOSITORY = new URL('../', import.meta.url).pathname

// How the command line reads its arguments: what it refuses, and how it says so (exit 2, one line).
describe('petstore CLI usage', () => {
  test('when --version or --help comes with more, then the more is refused in one line, exit 2; "--help <command>" is that command\'s help', async (t) => {
    const cwd = temporaryDirectory(t)
    for (const [args, extra] of [
      [['--version', '--foo'], '--foo'],
      [['-v', 'seed'], 'seed'],
      [['--help', 'seed', '--count'], '--count'],
      [['--help', 'nothing'], 'nothing'],
    ] as const) {
      const result = await runCli([...args], {}, cwd)
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
      const result = await runCli(args, {}, cwd)
      assert.equal(result.status, 0, args.join(' '))
      assert.match(result.stdout, /^Usage: petstore seed \[--count N\]/, args.join(' '))
    }
  })

  test('when an option is followed by what starts with a dash, then the line names it and says how to write such a value, exit 2', async (t) => {
    const cwd = temporaryDirectory(t)
    // A forgotten value: the next option is named as what was read.
    const forgotten = await runCli(['backup', '--to', '--force'], {}, cwd)
    assert.equal(forgotten.status, 2)
    assert.match(
      forgotten.stderr,
      /^petstore backup: --to needs a value, and "--force" after it reads as an option /,
    )
    const result = await runCli(['seed', '--count', '5', '--count', '-5'], {}, cwd)
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
      const result = await runCli([...args], {}, cwd)
      assert.deepEqual(
        [result.status, result.stdout, result.stderr],
        [2, '', `petstore ${command}: ${line} (see "petstore ${command} --help")\n`],
        args.join(' '),
      )
    }
    assert.equal(existsSync(join(cwd, 'data')), false, 'no command ran')
  })

  test('when a file or store is given as an empty value (--to "", an unset variable), or with white space around it, then it is refused in one line naming the option, exit 2, before anything is read or written', async (t) => {
    const cwd = temporaryDirectory(t)
    const database = { DATABASE_URL: 'sqlite:a.db' }
    assert.equal((await runCli(['seed', '--count', '3'], database, cwd)).status, 0)
    const before = readdirSync(cwd).sort()
    for (const [args, line] of [
      [['backup', '--to', ''], '--to needs a FILE (got "")'],
      [['backup', '--to='], '--to needs a FILE (got "")'],
      [['restore', '--from', ''], '--from needs a FILE (got "")'],
      [['copy', '--from', '', '--to', 'sqlite:b.db'], '--from needs a STORE (got "")'],
      [['copy', '--from', 'sqlite:a.db', '--to', ''], '--to needs a STORE (got "")'],
      [['backup', '--to', ' '], '--to must not begin or end with white space (got " " at its start)'],
      [['backup', '--to', 'b.db\t'], '--to must not begin or end with white space (got "\\t" at its end)'],
      [
        ['restore', '--from', ' b.db'],
        '--from must not begin or end with white space (got " " at its start)',
      ],
      [
        ['copy', '--from', 'sqlite:a.db', '--to', 'sqlite:b.db '],
        '--to must not begin or end with white space (got " " at its end)',
      ],
    ] as const) {
      const command = args[0]
      const result = await runCli([...args], database, cwd)
      assert.deepEqual(
        [result.status, result.stdout, result.stderr],
        [2, '', `petstore ${command}: ${line} (see "petstore ${command} --help")\n`],
        args.join(' '),
      )
    }
    assert.deepEqual(readdirSync(cwd).sort(), before, 'no file made or removed')
  })

  test('when asked for help, then every command answers with its usage and exit 0', async (t) => {
    const cwd = temporaryDirectory(t)
    for (const args of [
      ['--help'],
      ['serve', '--help'],
      ['migrate', '--help'],
      ['keys', '--help'],
      ['seed', '--help'],
      ['openapi', '--help'],
      ['keys', 'create', '--help'],
    ]) {
      const result = await runCli(args, {}, cwd)
      assert.equal(result.status, 0, args.join(' '))
      assert.match(result.stdout, /Usage/)
    }
  })

  test('when asked for its version, then it prints "petstore" and the package version, exit 0', async (t) => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
    for (const flag of ['--version', '-v']) {
      const result = await runCli([flag], {}, temporaryDirectory(t))
      assert.equal(result.status, 0, flag)
      assert.equal(result.stdout, `petstore ${version}\n`, flag)
    }
  })

  test('when a key name breaks the rule, then the one line says the rule, and points to the help once', async (t) => {
    const result = await runCli(['keys', 'create', '--name', ''], {}, temporaryDirectory(t))
    assert.deepEqual(
      [result.status, result.stderr],
      [
        2,
        'petstore keys: invalid key name "": 1 to 64 letters, digits, ".", "_" or "-" starting with a letter or digit (see "petstore keys --help")\n',
      ],
    )
  })

  test('when a key action lacks its name, then the reason quotes the usage that action expects', async (t) => {
    const cwd = temporaryDirectory(t)
    const revoke = await runCli(['keys', 'revoke'], {}, cwd)
    assert.equal(revoke.status, 2)
    assert.match(revoke.stderr, /^petstore keys: .*petstore keys revoke <name>/)
    const create = await runCli(['keys', 'create'], {}, cwd)
    assert.equal(create.status, 2)
    assert.match(create.stderr, /^petstore keys: .*petstore keys create --name <name>/)
  })

  const wrongUsage = [
    ['frobnicate'],
    ['keys'],
    ['keys', 'rotate'],
    ['keys', 'create'],
    ['keys', 'create', '--name', 'bad name!'],
    ['keys', 'create', '--name', `k${'e'.repeat(64)}`],
    ['seed', '--count', 'ten'],
    ['seed', '--count', '0'],
    // One over each bound.
    ['seed', '--count', '10000001'],
    ['copy', '--from', 'sqlite:x.db', '--to', 'sqlite:y.db', '--chunk-size', '100001'],
    ['migrate', '--force'],
    ['keys', 'revoke', 'a', 'b'],
    ['copy', '--from', 'foo', '--to', 'sqlite:x.db'],
    ['copy', '--from', 'sqlite:x.db', '--to', 'mysql://db/x'],
    ['copy', '--from', 'postgres://x:y@[bad/petstore', '--to', 'sqlite:x.db'],
    ['copy', '--from', 'sqlite:x.db', '--to', 'postgresql://db:99999/petstore'],
    ['copy', '--from', 'sqlite:file:x.db?mode=rwc', '--to', 'sqlite:y.db'],
    ['copy', '--from', 'sqlite:x.db', '--to', 'sqlite:file:y.db'],
    ['copy', '--from', 'sqlite:x.db', '--to', 'postgres://db/petstore?sslmode=verify_full'],
  ]
  for (const args of wrongUsage) {
    test(`when run as "petstore ${args.join(' ')}", then exit 2 with a one-line reason and nothing made`, async (t) => {
      const cwd = temporaryDirectory(t)
      const result = await runCli(args, {}, cwd)
      assert.deepEqual(readdirSync(cwd), [], 'no file made')
      assert.equal(result.status, 2)
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr)
      assert.match(result.stderr, new RegExp(`^petstore ${args[0]}: `))
      // A count out of its range: the line names the option and its range.
      const [option, value] = args.slice(-2)
      if (option === '--count' || option === '--chunk-size') {
        assert.match(
          result.stderr,
          new RegExp(`: ${option} must be an integer from 1 to \\d+ \\(got "${value}"\\)`),
        )
      }
      assert.doesNotMatch(result.stderr, /Invalid URL/)
    })
  }

  test('when npm run petstore is given a command\'s options without "--" (npm takes them as its own), then the line names them and says to put "--" before the command, exit 2, nothing done', async (t) => {
    const cwd = temporaryDirectory(t)
    const path = (process.env.PATH ?? '').split(':').filter((entry) => !entry.includes('node_modules'))
    const npmRun = (args: string[]) =>
      spawnSync('npm', ['run', '-s', 'petstore', ...args], {
        cwd: REPOSITORY,
        encoding: 'utf8',
        env: { PATH: path.join(':'), HOME: cwd, DATABASE_URL: `sqlite:${join(cwd, 'p.db')}` },
      })
    for (const [args, took, command] of [
      [['keys', 'create', '--name', 'ci'], '--name', 'keys'],
      [['keys', 'list', '--json'], '--json', 'keys'],
      [['seed', '--count', '5'], '--count', 'seed'],
      [['backup', '--force', '--to', 'b.db'], '--force', 'backup'],
    ] as const) {
      const result = npmRun([...args])
      // npm, told --json, prints its own account of the script's failure on stdout.
      const stdout = took === '--json' ? '' : result.stdout
      assert.deepEqual(
        [result.status, stdout, result.stderr],
        [
          2,
          '',
          `petstore ${command}: npm took ${took} as its own option: npm run passes on only what follows "--" (npm run petstore -- <command> <options>) (see "petstore ${command} --help")\n`,
        ],
        args.join(' '),
      )
    }
    assert.equal(existsSync(join(cwd, 'p.db')), false, 'nothing done')
    // With "--", the same commands run.
    const seeded = npmRun(['--', 'seed', '--count', '5'])
    assert.equal(seeded.status, 0, seeded.stderr)
    assert.match(seeded.stdout, /added 5 pets/)
  })

  test('when an unknown option names a setting (serve --port), then the line says the setting comes from the environment; another unknown option is named as such, exit 2', async (t) => {
    const cwd = temporaryDirectory(t)
    for (const [args, line] of [
      [
        ['serve', '--port', '18999'],
        'petstore serve: unknown option --port: PORT is a setting, given in the environment or in .env (see "petstore serve --help")\n',
      ],
      [
        ['seed', '--database-url=sqlite:x.db'],
        'petstore seed: unknown option --database-url: DATABASE_URL is a setting, given in the environment or in .env (see "petstore seed --help")\n',
      ],
      [['seed', '--bogus'], 'petstore seed: unknown option --bogus (see "petstore seed --help")\n'],
    ] as const) {
      const result = await runCli([...args], {}, cwd)
      assert.deepEqual([result.status, result.stdout, result.stderr], [2, '', line], args.join(' '))
    }
    assert.deepEqual(readdirSync(cwd), [], 'nothing made')
  })
})
