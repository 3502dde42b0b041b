import { readFileSync } from 'node:fs'

/** The version of this release, as package.json gives it (docs/versioning.md). */
export function releaseVersion(): string {
  return JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version
}
