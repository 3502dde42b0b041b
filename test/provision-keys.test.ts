import assert from 'node:assert/strict'
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import pino from 'pino'
import { generateApiKey, hashApiKey, storedFormOf } from '../src/auth/api-key.ts'
import { INITIAL_KEY_FILE, provisionKeys } from '../src/cli/provision-keys.ts'
import { ConfigError } from '../src/errors.ts'
import { createLogger } from '../src/log/logger.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { sqliteEngine } from './helpers/store-engines.ts'
import { testConfig } from './helpers/test-server.ts'

const KEY = /psk_[A-Za-z0-9_-]{43}/
const log = createLogger({ level: 'silent' })

function terminal(isTTY: boolean) {
  let output = ''
  return { isTTY, write: (text: string) => (output += text), output: () => output }
}

describe('provisioning keys at start', () => {
  test('when a brand-new installation starts on a terminal, then one key is shown there once and works', async (t) => {
    const { store } = await sqliteEngine.open(t)
    const screen = terminal(true)
    await provisionKeys({ store, config: testConfig(), log, dataDirectory: undefined, terminal: screen })
    const key = KEY.exec(screen.output())?.[0] ?? ''
    assert.ok(key, 'the key is printed')
    assert.deepEqual(await store.findActiveApiKey(hashApiKey(key)), { id: 1n, name: 'initial' })

    await provisionKeys({ store, config: testConfig(), log, dataDirectory: undefined, terminal: screen })
    assert.equal(screen.output().match(new RegExp(KEY, 'g'))?.length, 2, 'once, plus once in the sample curl')
    assert.equal((await store.listApiKeys()).length, 1, 'a second start creates nothing')
  })

  // A stale file: a key from a database since deleted, readable by others.
  for (const stale of [false, true]) {
    test(`when there is no terminal${stale ? ' and a stale key file is there' : ''}, then the key goes to a 0600 file next to the database${stale ? ', in its place' : ''}`, async (t) => {
      const { store } = await sqliteEngine.open(t)
      const directory = temporaryDirectory(t)
      const path = join(directory, INITIAL_KEY_FILE)
      const old = `${generateApiKey()}\n`
      if (stale) writeFileSync(path, old, { mode: 0o644 })
      const screen = terminal(false)
      await provisionKeys({ store, config: testConfig(), log, dataDirectory: directory, terminal: screen })
      const written = readFileSync(path, 'utf8')
      assert.match(written, KEY)
      assert.notEqual(written, old)
      const [found] = await store.findActiveApiKeys([hashApiKey(written.trim())])
      assert.equal(found?.name, 'initial', 'the key in the file is the one stored')
      assert.equal(statSync(path).mode & 0o777, 0o600)
      assert.equal(screen.output(), '')
    })
  }

  test('when the initial key file is still there at a later start, then a warn line names it, never the key', async (t) => {
    const { store } = await sqliteEngine.open(t)
    const directory = temporaryDirectory(t)
    const lines: Array<{ level: number; msg: string; path?: string }> = []
    const captured = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
    const start = () =>
      provisionKeys({
        store,
        config: testConfig(),
        log: captured,
        dataDirectory: directory,
        terminal: terminal(false),
      })
    await start()
    const path = join(directory, INITIAL_KEY_FILE)
    lines.length = 0
    await start()
    assert.deepEqual(
      lines.map(({ level, msg, path: named }) => ({ level, msg, path: named })),
      [
        {
          level: 40,
          msg: 'the initial API key is still in this file: once it is kept somewhere safe, delete the file',
          path,
        },
      ],
    )
    assert.doesNotMatch(JSON.stringify(lines), KEY)
    rmSync(path)
    lines.length = 0
    await start()
    assert.deepEqual(lines, [], 'said no more once the file is gone')
  })

  test('when no key exists and there is no terminal nor file for one, then the warn line says how to give one to that store: API_KEYS alone for an in-memory one', async (t) => {
    for (const [url, advice] of [
      ['sqlite::memory:', /set API_KEYS: a "petstore keys" command would open an in-memory store of its own/],
      [
        'postgres://u@localhost:5432/db',
        /create one with "petstore keys create --name <name>" or set API_KEYS/,
      ],
    ] as const) {
      const { store } = await sqliteEngine.open(t)
      const lines: Array<{ level: number; msg: string }> = []
      const captured = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
      const config = testConfig({ DATABASE_URL: url })
      await provisionKeys({
        store,
        config,
        log: captured,
        dataDirectory: undefined,
        terminal: terminal(false),
      })
      assert.equal(lines.length, 1, url)
      assert.equal(lines[0]?.level, 40)
      assert.match(lines[0]?.msg ?? '', advice, url)
    }
  })

  test('when every key has been revoked (or a restore brought back only revoked ones), then a start does not mint a new one, and says at warn that every call will get 401', async (t) => {
    const { store } = await sqliteEngine.open(t)
    await store.createApiKey(storedFormOf('only', generateApiKey()))
    await store.revokeApiKey('only')
    const screen = terminal(true)
    const lines: Array<{ level: number; msg: string }> = []
    const captured = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
    await provisionKeys({
      store,
      config: testConfig(),
      log: captured,
      dataDirectory: undefined,
      terminal: screen,
    })
    assert.equal(screen.output(), '')
    assert.equal((await store.listApiKeys()).length, 1)
    assert.deepEqual(
      lines.map(({ level, msg }) => ({ level, msg })),
      [
        {
          level: 40,
          msg: 'every API key is revoked: every call will get 401; create one with "petstore keys create --name <name>" or set API_KEYS',
        },
      ],
    )
  })

  test('when API_KEYS gives a key that was revoked, then it stays revoked and the start says at warn which entry, and that its calls get 401', async (t) => {
    const { store } = await sqliteEngine.open(t)
    const [revoked, kept] = [generateApiKey(), generateApiKey()]
    await store.createApiKey(storedFormOf('old', revoked))
    await store.revokeApiKey('old')
    const lines: Array<{ level: number; msg: string; entry?: string }> = []
    const captured = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
    await provisionKeys({
      store,
      config: testConfig({ API_KEYS: `renamed:${revoked},kept:${kept}` }),
      log: captured,
      dataDirectory: undefined,
      terminal: terminal(false),
    })
    assert.equal(await store.findActiveApiKey(hashApiKey(revoked)), undefined, 'still revoked')
    assert.deepEqual(
      lines.map(({ level, msg, entry }) => ({ level, msg, entry })),
      [
        {
          level: 40,
          msg: 'API_KEYS gives a key that was revoked: its calls get 401 (a revoked key is never revived); remove the entry, or give a new key',
          entry: 'renamed',
        },
      ],
    )
    assert.doesNotMatch(JSON.stringify(lines), /psk_/, 'never the key')
  })

  test('when API_KEYS still gives a revoked key whose name a new key has since, then the start goes on, the entry said at warn as revoked, and the new key keeps its name', async (t) => {
    const { store } = await sqliteEngine.open(t)
    const [revoked, successor] = [generateApiKey(), generateApiKey()]
    await store.createApiKey(storedFormOf('ci', revoked))
    await store.revokeApiKey('ci')
    await store.createApiKey(storedFormOf('ci', successor))
    const lines: Array<{ level: number; msg: string; entry?: string }> = []
    const captured = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
    await provisionKeys({
      store,
      config: testConfig({ API_KEYS: `ci:${revoked}` }),
      log: captured,
      dataDirectory: undefined,
      terminal: terminal(false),
    })
    assert.equal(await store.findActiveApiKey(hashApiKey(revoked)), undefined, 'still revoked')
    assert.equal((await store.findActiveApiKey(hashApiKey(successor)))?.name, 'ci')
    assert.deepEqual(
      lines.map(({ level, entry }) => ({ level, entry })),
      [{ level: 40, entry: 'ci' }],
    )
    assert.match(lines[0]?.msg ?? '', /a key that was revoked/)
  })

  test('when API_KEYS reuses the name of another active key, then start fails with a ConfigError naming API_KEYS', async (t) => {
    const { store } = await sqliteEngine.open(t)
    await store.createApiKey(storedFormOf('ci', generateApiKey()))
    const config = testConfig({ API_KEYS: `ci:${generateApiKey()}` })
    await assert.rejects(
      provisionKeys({ store, config, log, dataDirectory: undefined, terminal: terminal(false) }),
      (error: Error) => error instanceof ConfigError && /API_KEYS names "ci"/.test(error.message),
    )
  })

  test('when API_KEYS gives a new key and then a name another active key has, then the start fails and stores neither', async (t) => {
    const { store } = await sqliteEngine.open(t)
    await store.createApiKey(storedFormOf('ci', generateApiKey()))
    const fresh = generateApiKey()
    const config = testConfig({ API_KEYS: `deploy:${fresh},ci:${generateApiKey()}` })
    await assert.rejects(
      provisionKeys({ store, config, log, dataDirectory: undefined, terminal: terminal(false) }),
      (error: Error) => error instanceof ConfigError && /API_KEYS names "ci"/.test(error.message),
    )
    assert.equal(await store.findActiveApiKey(hashApiKey(fresh)), undefined, 'the first entry was not stored')
    assert.deepEqual(
      (await store.listApiKeys()).map(({ name }) => name),
      ['ci'],
    )
  })

  test('when API_KEYS gives under a new name a key stored under another, then the start says at warn that it keeps its name', async (t) => {
    const { store } = await sqliteEngine.open(t)
    const key = generateApiKey()
    await store.createApiKey(storedFormOf('ci', key))
    const lines: Array<{ level: number; msg: string; entry?: string; storedAs?: string }> = []
    const captured = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
    await provisionKeys({
      store,
      config: testConfig({ API_KEYS: `deploy:${key}` }),
      log: captured,
      dataDirectory: undefined,
      terminal: terminal(false),
    })
    assert.deepEqual(await store.findActiveApiKey(hashApiKey(key)), { id: 1n, name: 'ci' })
    assert.deepEqual(
      lines.map(({ level, msg, entry, storedAs }) => ({ level, msg, entry, storedAs })),
      [
        {
          level: 40,
          msg: 'API_KEYS gives a key stored under another name: it keeps that name ("keys revoke" knows it by it); give the entry that name, or a new key',
          entry: 'deploy',
          storedAs: 'ci',
        },
      ],
    )
    assert.doesNotMatch(JSON.stringify(lines), /psk_/, 'never the key')
  })
})
