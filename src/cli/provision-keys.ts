import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import { generateApiKey, storedFormOf } from '../auth/api-key.ts'
import type { Config } from '../config.ts'
import { ConfigError } from '../errors.ts'
import { DuplicateKeyNameError, type Store } from '../store/store.ts'

const INITIAL_KEY_NAME = 'initial'
export const INITIAL_KEY_FILE = 'initial-api-key'

const nameTaken = (name: string) =>
  new ConfigError(
    `API_KEYS names "${name}", which another active key already has: revoke that key first, or use a new name`,
  )

/** Where a newcomer on this machine reaches the API (a relative base is completed with the local port). */
function tryItBase({ baseUrls, server }: Config): string {
  const base = baseUrls.publicBaseUrl
  return base.startsWith('/') ? `http://localhost:${server.port}${base}` : base
}

export interface ProvisionOptions {
  store: Store
  config: Config
  log: FastifyBaseLogger
  /** Where the embedded store keeps its file; the initial key is written there when not on a terminal. */
  dataDirectory: string | undefined
  /** A terminal to show the initial key on, if the process has one. */
  terminal: { isTTY?: boolean; write(text: string): unknown }
}

/**
 * Stores the keys of `API_KEYS` (hashed) and, on a brand-new installation only, creates one named "initial",
 * shown on a terminal or written to a file only this user reads, never logged. Once keys exist none is minted
 * here, so revoking every key stays in force (docs/decisions.md, "API keys").
 */
export async function provisionKeys({ store, config, log, dataDirectory, terminal }: ProvisionOptions) {
  const entries = config.apiKeys.map(({ name, key }) => storedFormOf(name, key))
  // Every entry checked before any is stored: a refused start changes nothing.
  const activeNames = new Set(
    (await store.listApiKeys()).filter((key) => key.revokedAt === undefined).map((key) => key.name),
  )
  // Only a key never stored takes its name: one known (revoked since, its name given to a new key) is left
  // as it is, and said below.
  for (const { name, hash } of entries) {
    if (activeNames.has(name) && !(await store.apiKeyStored(hash))) throw nameTaken(name)
  }
  for (const stored of entries) {
    const { name } = stored
    await store.ensureApiKey(stored).catch((error: unknown) => {
      // Another process took the name since the check above.
      throw error instanceof DuplicateKeyNameError ? nameTaken(name) : error
    })
    // Added or known, only a key revoked before is not active now: it would look given, and get 401.
    const active = await store.findActiveApiKey(stored.hash)
    if (active === undefined) {
      log.warn(
        { entry: name },
        'API_KEYS gives a key that was revoked: its calls get 401 (a revoked key is never revived); remove the entry, or give a new key',
      )
    } else if (active.name !== name) {
      log.warn(
        { entry: name, storedAs: active.name },
        'API_KEYS gives a key stored under another name: it keeps that name ("keys revoke" knows it by it); give the entry that name, or a new key',
      )
    }
  }
  const keys = await store.listApiKeys()
  if (keys.length > 0) {
    // Revoked, every one (or a restore brought back only revoked ones): ready, and every call a 401.
    if (keys.every((key) => key.revokedAt !== undefined)) {
      log.warn(
        'every API key is revoked: every call will get 401; create one with "petstore keys create --name <name>" or set API_KEYS',
      )
    }
    // The handover's file, left in place: a key in plain text beside the database, for as long as it stays.
    const left = dataDirectory === undefined ? undefined : join(dataDirectory, INITIAL_KEY_FILE)
    if (left !== undefined && existsSync(left)) {
      log.warn(
        { path: left },
        'the initial API key is still in this file: once it is kept somewhere safe, delete the file',
      )
    }
    return
  }

  const key = generateApiKey()
  // A container's main process is PID 1, or the child of an init that is (`--init`, a shell entry point),
  // and its terminal (run with -t) is its log, kept by the runtime and shipped on: the key goes to the
  // file there, as with no terminal. On a machine, a terminal's service is a shell's or npm's child.
  if (terminal.isTTY && process.pid !== 1 && process.ppid !== 1) {
    await store.createApiKey(storedFormOf(INITIAL_KEY_NAME, key))
    terminal.write(
      `\nNo API key existed, so one was created. It is shown only this once; keep it somewhere safe:\n\n  ${key}\n\n` +
        `Try it:  curl -H "Authorization: Bearer ${key}" ${tryItBase(config)}/pets\n\n`,
    )
  } else if (dataDirectory !== undefined) {
    const path = join(dataDirectory, INITIAL_KEY_FILE)
    // A stale file (from a key since revoked) is replaced, never reused with whatever mode it had.
    rmSync(path, { force: true })
    try {
      writeFileSync(path, `${key}\n`, { mode: 0o600, flag: 'wx' })
    } catch (error) {
      // Nothing is stored yet: the next start makes another key; a part written is removed first.
      rmSync(path, { force: true })
      throw new Error(`cannot write the first API key to ${path}: ${whyNotWritten(error)}`)
    }
    await store.createApiKey(storedFormOf(INITIAL_KEY_NAME, key))
    log.warn(
      { path },
      'no API key existed: created one and wrote it to this file (mode 0600); read it, then delete the file',
    )
  } else if (config.database.engine === 'sqlite') {
    // Only `:memory:` has no data directory: no other process can reach this store.
    log.warn(
      'no API key exists: every call will get 401; set API_KEYS: a "petstore keys" command would open an in-memory store of its own',
    )
  } else {
    log.warn(
      'no API key exists: every call will get 401; create one with "petstore keys create --name <name>" or set API_KEYS',
    )
  }
}

/** What the start's line says of a key file it could not write, and what to do. */
function whyNotWritten(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException
  if (code === 'ENOSPC' || code === 'EDQUOT')
    return `the disk holding it is full (${code}): free space on it, then start again`
  return message
}
