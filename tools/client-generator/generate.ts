// Generates packages/client/src/openapi-types.ts from the OpenAPI document the app serves.
//
// This is a package of its own because openapi-typescript needs the TypeScript 5 compiler API
// (`ts.factory`), while the service is checked with TypeScript 7, which has no JavaScript API. It is an npm
// workspace, so the repository's `npm install` gives it its own TypeScript 5; then:
//
//   node tools/client-generator/generate.ts            writes packages/client/src/openapi-types.ts
//   node tools/client-generator/generate.ts --stdout   prints what it would write (the freshness test)
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import openapiTS, { astToString } from 'openapi-typescript'
import ts from 'typescript'

const CLI = fileURLToPath(new URL('../../bin/petstore.js', import.meta.url))
const OUTPUT = fileURLToPath(new URL('../../packages/client/src/openapi-types.ts', import.meta.url))

const HEADER = `// Generated from the service's OpenAPI document by \`npm run client:generate\`: do not edit.
// Every int64 is a bigint (JavaScript numbers round above 2^53); the client parses and writes them exactly.
`

const BIGINT = ts.factory.createKeywordTypeNode(ts.SyntaxKind.BigIntKeyword)

/**
 * The document as `petstore openapi` prints it: built from the routes, no database touched. It runs in an
 * empty directory with no settings, so neither the caller's environment nor a .env file can change it.
 */
function currentDocument(): string {
  const empty = mkdtempSync(join(tmpdir(), 'petstore-client-generator-'))
  try {
    return execFileSync(process.execPath, [CLI, 'openapi'], {
      cwd: empty,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent' },
    })
  } finally {
    rmSync(empty, { recursive: true, force: true })
  }
}

export async function generateClientTypes(document: string = currentDocument()): Promise<string> {
  const ast = await openapiTS(document, {
    silent: true,
    transform: (schema) => (schema.format === 'int64' ? BIGINT : undefined),
  })
  return `${HEADER}${astToString(ast)}`
}

if (import.meta.main) {
  const types = await generateClientTypes()
  if (process.argv.includes('--stdout')) process.stdout.write(types)
  else {
    writeFileSync(OUTPUT, types)
    process.stdout.write(`wrote ${relative(process.cwd(), OUTPUT)}\n`)
  }
}
