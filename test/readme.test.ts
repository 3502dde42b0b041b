import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { configTable, errorCodeTable } from '../scripts/readme-tables.ts'

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const ci = readFileSync(new URL('../.ci/run', import.meta.url), 'utf8')

describe('README', () => {
  test('when the configuration schema or the error codes change, then the README tables must follow', () => {
    assert.ok(readme.includes(configTable()), 'configuration table is stale: run npm run readme:tables')
    assert.ok(readme.includes(errorCodeTable()), 'error code table is stale: run npm run readme:tables')
  })

  test('when CI runs, then it runs the test command the README gives', () => {
    const commands = /```sh\n(.+)\n(.+)\n```/.exec(readme)
    const testCommand = commands?.[2]?.split('#')[0]?.trim()
    assert.equal(testCommand, 'npm test')
    assert.match(ci, new RegExp(`^${testCommand}$`, 'm'))
  })
})
