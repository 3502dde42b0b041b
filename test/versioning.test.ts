import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { postgresMigrations } from '../src/store/postgres/postgres-migrations.ts'
import { sqliteMigrations } from '../src/store/sqlite/sqlite-migrations.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCli, serveForTest } from './helpers/cli-process.ts'

const changelog = readFileSync(new URL('../CHANGELOG.md', import.meta.url), 'utf8')
const { version: packageVersion } = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
)
const SEMVER = /^(\d+)\.(\d+)\.(\d+)$/

/** The CHANGELOG's sections, newest first: `Unreleased` or a version with its date. */
const sections = [...changelog.matchAll(/^## \[([^\]]+)\](?: - (\S+))?$/gm)].map((match) => ({
  name: match[1] ?? '',
  date: match[2],
}))
const releases = sections.filter((section) => section.name !== 'Unreleased')

function compareVersions(a: string, b: string): number {
  const [x, y] = [a, b].map((v) => (SEMVER.exec(v) ?? []).slice(1).map(Number))
  for (let i = 0; i < 3; i++) if (x?.[i] !== y?.[i]) return (x?.[i] ?? 0) - (y?.[i] ?? 0)
  return 0
}

describe('versions', () => {
  test('when the migrations are listed, then versions count up from 1, floors never pass their version nor fall, and both engines agree', () => {
    const shape = (migrations: typeof sqliteMigrations) =>
      migrations.map(({ version, name, compatibleFrom }) => ({ version, name, compatibleFrom }))
    assert.deepEqual(shape(postgresMigrations), shape(sqliteMigrations), 'one schema history, two dialects')
    let floor = 1
    for (const [index, { version, compatibleFrom }] of sqliteMigrations.entries()) {
      assert.equal(version, index + 1)
      // A floor that rose without the change breaking anything would refuse releases that run on it.
      assert.ok(compatibleFrom >= floor && compatibleFrom <= version, `migration ${version}`)
      floor = compatibleFrom
    }
  })

  test('when the CHANGELOG is read, then it has Unreleased first and dated releases, newest first', () => {
    assert.equal(sections[0]?.name, 'Unreleased')
    assert.ok(releases.length > 0, 'at least one release')
    for (const release of releases) {
      assert.match(release.name, SEMVER, `${release.name} is a semantic version`)
      assert.match(release.date ?? '', /^\d{4}-\d{2}-\d{2}$/, `${release.name} has an ISO date`)
    }
    for (let i = 1; i < releases.length; i++) {
      const [newer, older] = [releases[i - 1], releases[i]]
      assert.ok(
        compareVersions(newer?.name ?? '', older?.name ?? '') > 0,
        `${newer?.name} after ${older?.name}`,
      )
      assert.ok((newer?.date ?? '') >= (older?.date ?? ''), `${newer?.name} not dated before ${older?.name}`)
    }
  })

  test('when petstore --version runs, then it agrees with package.json and the latest CHANGELOG release', async (t) => {
    const result = await runCli(['--version'], {}, temporaryDirectory(t))
    assert.equal(result.status, 0)
    assert.equal(result.stdout, `petstore ${packageVersion}\n`)
    assert.equal(releases[0]?.name, packageVersion, 'the latest release is the package version')
  })

  test('when the service serves, then its metrics name the release, the API version and the Node.js that run it, in one petstore_build_info sample of 1', async (t) => {
    const server = await serveForTest(t, {}, temporaryDirectory(t))
    const metricsPort = /metrics on port (\d+)/.exec(server.output())?.[1]
    assert.ok(metricsPort, server.output())
    const scrape = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    const apiVersion = /^API version: (\d+\.\d+\.\d+)/m.exec(changelog)?.[1]
    assert.deepEqual(
      scrape.split('\n').filter((line) => line.startsWith('petstore_build_info')),
      [
        `petstore_build_info{version="${packageVersion}",api_version="${apiVersion}",nodejs="${process.version}"} 1`,
      ],
    )
  })

  test('when the OpenAPI document is printed, then info.version is the API version the CHANGELOG names last, with the major of its path', async (t) => {
    const result = await runCli(['openapi'], { LOG_LEVEL: 'silent' }, temporaryDirectory(t))
    assert.equal(result.status, 0, result.stderr)
    const document = JSON.parse(result.stdout) as {
      info: { version: string }
      servers: Array<{ url: string }>
    }
    const named = /^API version: (\d+\.\d+\.\d+)/m.exec(changelog)?.[1]
    assert.equal(document.info.version, named, 'the newest "API version:" line of the CHANGELOG')
    const major = SEMVER.exec(document.info.version)?.[1]
    assert.equal(document.servers[0]?.url, `/v${major}`, 'served under /v<major>')
  })
})
