// The page's own address in its configs; the tests put the test server's there.
export const PAGE_ADDRESS = 'http://localhost:8080/v1'

/**
 * Each generator of docs/clients.md as it comes, by the page's section title: no int64 measure, the value
 * written as the number its types ask for. `src/main.ts` creates categoryId 9007199254740993, reads the pet
 * EXACT_PET_ID, and prints the new id and the category id it read, as strings.
 */
export const GENERATOR_DEFAULTS: Record<string, { files: Record<string, string>; commands: string }> = {
  'openapi-typescript + openapi-fetch': {
    commands: `npm install -D openapi-typescript && npm install openapi-fetch
      npx openapi-typescript ${PAGE_ADDRESS}/openapi.json -o src/petstore.ts
      node src/main.ts`,
    files: {
      'src/main.ts': `import createClient from 'openapi-fetch'
import type { paths } from './petstore.ts'
const api = createClient<paths>({ baseUrl: process.env.PETSTORE_URL, headers: { Authorization: \`Bearer \${process.env.PETSTORE_API_KEY}\` } })
const created = (await api.POST('/pets', { body: { name: 'Rex', categoryId: 9007199254740993 } })).data!
const read = (await api.GET('/pets/{petId}', { params: { path: { petId: Number(process.env.EXACT_PET_ID) } } })).data!
console.log(JSON.stringify({ created: String(created.id), read: String(read.categoryId) }))
`,
    },
  },
  '@hey-api/openapi-ts': {
    commands: 'npm install -D @hey-api/openapi-ts\nnpx @hey-api/openapi-ts\nnode src/main.ts',
    files: {
      'openapi-ts.config.ts': `export default { input: '${PAGE_ADDRESS}/openapi.json', output: { path: 'src/client', importFileExtension: '.ts' } }\n`,
      'src/main.ts': `import { client } from './client/client.gen.ts'
import { createPet, getPet } from './client/sdk.gen.ts'
client.setConfig({ baseUrl: process.env.PETSTORE_URL, auth: process.env.PETSTORE_API_KEY })
const created = (await createPet({ body: { name: 'Rex', categoryId: 9007199254740993 }, throwOnError: true })).data
const read = (await getPet({ path: { petId: Number(process.env.EXACT_PET_ID) }, throwOnError: true })).data
console.log(JSON.stringify({ created: String(created.id), read: String(read.categoryId) }))
`,
    },
  },
  orval: {
    commands: 'npm install -D orval\nnpx orval --config orval.config.ts\nnode src/main.ts',
    files: {
      'orval.config.ts': `export default { petstore: { input: '${PAGE_ADDRESS}/openapi.json', output: { target: 'src/petstore.ts', client: 'fetch', baseUrl: '${PAGE_ADDRESS}' } } }\n`,
      'src/main.ts': `import { createPet, getPet } from './petstore.ts'
const options = { headers: { Authorization: \`Bearer \${process.env.PETSTORE_API_KEY}\` } }
const created = (await createPet({ name: 'Rex', categoryId: 9007199254740993 }, options)).data
const read = (await getPet(Number(process.env.EXACT_PET_ID), options)).data
console.log(JSON.stringify({ created: String(created.id), read: String(read.categoryId) }))
`,
    },
  },
}
