import { spawnSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { temporaryDirectory } from './cleanup.ts'
import { CLI, cliEnvironment, runCommand } from './cli-process.ts'

export const RUNUSER = ['/usr/sbin/runuser', '/sbin/runuser'].find((path) => existsSync(path))
export const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path))
// A user other than the one that owns the data: PostgreSQL's, which the machine has for its server.
export const OTHER_USER = 'postgres'

/** Runs the CLI as OTHER_USER, in `cwd`, with `env`. */
export function runAsOtherUser(args: string[], env: Record<string, string>, cwd: string) {
  const environment = Object.entries(cliEnvironment(env)).map(([name, value]) => `${name}=${value}`)
  return runCommand(
    RUNUSER as string,
    ['-u', OTHER_USER, '--', 'env', ...environment, process.execPath, CLI, ...args],
    { cwd },
    { timeoutMs: 30_000 },
  )
}

/** Why the other-user suites cannot run here, or undefined when they can. */
export function otherUserLack() {
  if (process.getuid?.() !== 0) return { missing: 'not running as root', remedy: 'run the tests as root' }
  if (RUNUSER === undefined || SETPRIV === undefined || spawnSync('id', ['-u', OTHER_USER]).status !== 0)
    return {
      missing: `no runuser, no setpriv or no ${OTHER_USER} user`,
      remedy: 'apt-get install util-linux postgresql',
    }
  return undefined
}

/** The user and group ids of the user `name`. */
export function userIds(name: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(spawnSync('id', [flag, name], { encoding: 'utf8' }).stdout.trim())
  return { uid: id('-u'), gid: id('-g') }
}

/** A directory any user may enter, holding `data/` (mode 0700), OTHER_USER's, as a service's state directory is. */
export function dataOfOtherUser(t: TestContext) {
  const cwd = temporaryDirectory(t)
  chmodSync(cwd, 0o755)
  const { uid, gid } = userIds(OTHER_USER)
  const data = join(cwd, 'data')
  mkdirSync(data, { mode: 0o700 })
  chownSync(data, uid, gid)
  return { cwd, data, uid, gid }
}
