// Adds a pet safely (an Idempotency-Key makes the create retryable), then lists the available pets.
//
// In a project with @petstore/client installed (see the README, "From TypeScript, and the examples"):
//
//   PETSTORE_URL=http://localhost:8080/v1 PETSTORE_API_KEY=psk_… node list-and-create.ts
//
// with Node.js 24, which runs TypeScript as it is.
import { randomUUID } from 'node:crypto'
import { createClient, PetStoreError } from '@petstore/client'

const baseUrl = process.env.PETSTORE_URL
const apiKey = process.env.PETSTORE_API_KEY
if (!baseUrl || !apiKey) {
  console.error('Set PETSTORE_URL (the base URL, ending in /v1) and PETSTORE_API_KEY (a psk_… key).')
  process.exit(2)
}

const client = createClient({ baseUrl, apiKey })

try {
  // A key made once per pet and reused on every retry: a retry returns this same pet, never a second one.
  const idempotencyKey = randomUUID()
  // categoryId is an int64, so a bigint: 2^53 + 1 would be rounded as a JavaScript number.
  const newPet = { name: 'Rex', categoryId: 9007199254740993n, status: 'available' } as const
  const pet = await client.createPet(newPet, { idempotencyKey })
  console.log(`created pet ${pet.id}: ${pet.name}, category ${pet.categoryId}, ${pet.status}`)

  const retried = await client.createPet(newPet, { idempotencyKey })
  console.log(`retried with the same Idempotency-Key: pet ${retried.id} again`)

  // listAllPets follows the `Link: <…>; rel="next"` headers page after page.
  let count = 0
  for await (const available of client.listAllPets({ status: 'available', limit: 50 })) {
    console.log(`  ${available.id}\t${available.name}\tcategory ${available.categoryId}`)
    count++
  }
  console.log(`${count} available pet(s)`)
} catch (error) {
  if (!(error instanceof PetStoreError)) throw error
  // Every failure is the service's Error body: a stable code, a message naming the problem, the status.
  console.error(`petstore answered ${error.status} ${error.code}: ${error.message}`)
  process.exitCode = 1
}
