import assert from 'node:assert/strict'
import { chmodSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { loadConfig } from '../src/config.ts'
import { readEnvironment } from '../src/environment-file.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

describe('configuration: the .env file', () => {
  test('when .env, readable by other users, holds a password in a DATABASE_URL of any form, a Unix socket one too, then it is said', (t) => {
    for (const url of [
      'postgres://app:secret@db.internal:5432/pets',
      'postgres://app:secret@/pets?host=/run/postgresql',
      'postgres://app@/pets?host=/run/postgresql&password=secret',
    ]) {
      const path = join(temporaryDirectory(t), '.env')
      writeFileSync(path, `DATABASE_URL=${url}\n`, { mode: 0o644 })
      chmodSync(path, 0o644)
      assert.deepEqual(
        readEnvironment(path, {}).warnings,
        ['.env holds DATABASE_URL, and other users can read it (mode 0644): chmod 600 .env'],
        url,
      )
    }
  })

  test('when .env holding a password is readable by its group alone, then it is said too; by its owner alone, then not', (t) => {
    for (const [mode, warnings] of [
      [0o640, ['.env holds DATABASE_URL, and other users can read it (mode 0640): chmod 600 .env']],
      [0o600, []],
    ] as const) {
      const path = join(temporaryDirectory(t), '.env')
      writeFileSync(path, 'DATABASE_URL=postgres://app:secret@db.internal:5432/pets\n', { mode })
      chmodSync(path, mode)
      assert.deepEqual(readEnvironment(path, {}).warnings, warnings, mode.toString(8))
    }
  })

  test('when .env, readable by other users, holds PGPASSWORD, then the password is said to be readable as well as of no effect', (t) => {
    const path = join(temporaryDirectory(t), '.env')
    writeFileSync(path, 'PGPASSWORD=secret\n', { mode: 0o644 })
    chmodSync(path, 0o644)
    const warnings = readEnvironment(path, {}).warnings
    assert.equal(warnings.length, 2, warnings.join(' | '))
    assert.match(warnings[0] ?? '', /^\.env sets PGPASSWORD, which is no setting of this service/)
    assert.equal(
      warnings[1],
      '.env holds PGPASSWORD, and other users can read it (mode 0644): chmod 600 .env',
    )
    assert.equal(warnings.join('').includes('secret'), false, 'never the password')
  })

  test('when a line of .env has no "=" (a space or a colon where "=" belongs), then it is said to set nothing, by its number, never its text', (t) => {
    const path = join(temporaryDirectory(t), '.env')
    const text = [
      'PORT 18945',
      '# a comment',
      '',
      'RATE_LIMIT_PER_MINUTE: 5',
      'export LOG_LEVEL=info',
      'BANNER="first line',
      'second line, with no equals sign"',
      `API_KEYS ops:${generateApiKey()}`,
    ].join('\n')
    writeFileSync(path, text, { mode: 0o600 })
    const warnings = readEnvironment(path, {}).warnings
    assert.deepEqual(warnings.slice(1), [
      '.env line 1 has no "=": it sets nothing',
      '.env line 4 has no "=": it sets nothing',
      '.env line 8 has no "=": it sets nothing',
    ])
    assert.match(warnings[0] ?? '', /^\.env sets BANNER, which is no setting of this service/)
  })

  test('when .env sets a name one or two letters off a setting (PROT, LOG_LEVLE, metrics_port), then the warning names the setting meant', (t) => {
    const directory = temporaryDirectory(t)
    const path = join(directory, '.env')
    writeFileSync(path, 'PROT=9090\nLOG_LEVLE=debug\nmetrics_port=9465\nPGPASSWORD=x\n', { mode: 0o600 })
    const warnings = readEnvironment(path, {}).warnings.filter((line) => line.startsWith('.env sets '))
    const meant = Object.fromEntries(
      warnings.map((line) => {
        const found =
          /^\.env sets (\w+), which is no setting of this service(?:: did you mean (\w+)\?)?/.exec(line)
        return [found?.[1], found?.[2]]
      }),
    )
    assert.deepEqual(meant, {
      PROT: 'PORT',
      LOG_LEVLE: 'LOG_LEVEL',
      metrics_port: 'METRICS_PORT',
      PGPASSWORD: undefined,
    })
  })

  test('when a .env file exists, then it fills what the environment does not set', (t) => {
    const directory = temporaryDirectory(t)
    const path = join(directory, '.env')
    writeFileSync(path, 'PORT=9090\nLOG_LEVEL=debug\nHOST=0.0.0.0\n')
    const env = readEnvironment(path, { HOST: '127.0.0.2' }).environment
    const config = loadConfig(env)
    assert.equal(config.server.port, 9090, 'from the file')
    assert.equal(config.log.level, 'debug', 'from the file')
    assert.equal(config.server.host, '127.0.0.2', 'the environment wins over the file')
    assert.deepEqual(readEnvironment(join(directory, 'absent.env'), {}), { environment: {}, warnings: [] })
  })
})
