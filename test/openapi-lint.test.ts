import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { createConfig, lintFromString } from '@redocly/openapi-core'
import { Document, Spectral } from '@stoplight/spectral-core'
import owasp from '@stoplight/spectral-owasp-ruleset'
import Parsers from '@stoplight/spectral-parsers'
import { oas } from '@stoplight/spectral-rulesets'
import { startTestServer } from './helpers/test-server.ts'

// The linters read the document the app serves, as any tool pointed at /v1/openapi.json would. All of them
// run offline: the document has no remote reference, and the packages are used as libraries (no CLI, so
// no telemetry).

/** The OWASP rules the README lists as not followed, each with its reason: the only findings allowed. */
function owaspExceptionsInReadme(): string[] {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  const section = readme.split('<!-- OWASP exceptions -->')[1]?.split('<!-- end of OWASP exceptions -->')[0]
  assert.ok(section, 'the README has the OWASP exceptions section')
  return [...section.matchAll(/^- `(owasp:[^`]+)`: \S/gm)].map((match) => match[1] as string).sort()
}

async function servedDocument(t: Parameters<typeof startTestServer>[0]): Promise<string> {
  const server = await startTestServer(t)
  const response = await server.app.inject({ url: '/v1/openapi.json' })
  assert.equal(response.statusCode, 200)
  return response.body
}

async function spectralFindings(text: string, ruleset: object): Promise<string[]> {
  const spectral = new Spectral()
  spectral.setRuleset(ruleset as Parameters<Spectral['setRuleset']>[0])
  const results = await spectral.run(new Document(text, Parsers.Json, 'openapi.json'))
  // Every severity counts, warnings and hints included.
  return results.map((result) => `${result.code} at ${result.path.join('.')}: ${result.message}`)
}

describe('OpenAPI document as linters read it', () => {
  test("when Redocly's recommended rules read it, then they find nothing", async (t) => {
    const text = await servedDocument(t)
    const config = await createConfig({ extends: ['recommended'] })
    const problems = await lintFromString({ source: text, absoluteRef: 'file:///openapi.json', config })
    assert.deepEqual(
      problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`),
      [],
    )
  })

  test("when Spectral's spectral:oas rules read it, then they find nothing", async (t) => {
    const text = await servedDocument(t)
    assert.deepEqual(await spectralFindings(text, oas), [])
  })

  test("when Spectral's OWASP rules read it, then only the rules the README gives a reason for are broken", async (t) => {
    const text = await servedDocument(t)
    const exceptions = owaspExceptionsInReadme()
    const findings = await spectralFindings(text, owasp)
    const unexcused = findings.filter((finding) => !exceptions.includes(finding.split(' ')[0] ?? ''))
    assert.deepEqual(unexcused, [])
    // An exception that no finding needs any more is taken out of the README, so the list never drifts.
    const broken = [...new Set(findings.map((finding) => finding.split(' ')[0]))].sort()
    assert.deepEqual(broken, exceptions)
  })

  test('when the document is served, then its int64 bounds are written exactly, not rounded to doubles', async (t) => {
    const text = await servedDocument(t)
    const categoryId = /"categoryId":\{"type":"integer","format":"int64",[^}]*\}/.exec(text)?.[0] ?? ''
    assert.match(categoryId, /"minimum":-9223372036854775808\b/)
    assert.match(categoryId, /"maximum":9223372036854775807\b/)
  })
})
