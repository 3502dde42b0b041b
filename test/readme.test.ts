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

  test("when CI runs, then it runs the README's test command, literally", () => {
    const commands = /```sh\n(.+)\n(.+)\n```/.exec(readme)
    const [start, testCommand] = [1, 2].map((line) => commands?.[line]?.split('#')[0]?.trim())
    assert.equal(start, 'npm install && npm start')
    assert.equal(testCommand, 'npm install && npm test')
    assert.match(ci, new RegExp(`^${testCommand}$`, 'm'))
    assert.doesNotMatch(ci, /node@|nvm |\.cache\/node/, 'CI installs no Node.js: the project brings its own')
  })
})
