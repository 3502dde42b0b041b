// Run with `--trace-gc-nvp`: commits `batches` batches of 32 creates through a PostgreSQL store on the
// database at `url` (migrated), after a tenth as many to warm up, whose end it writes on stderr (ms since
// the start, as the GC's lines count them). Between batches it allocates as a server reading the next
// requests would, so that scavenges fall all along; the GC's lines on stdout tell what was promoted.
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts'

const [url, batchesText] = process.argv.slice(2)
const store = new PostgresStore({
  url: url as string,
  poolSize: 2,
  statementTimeoutMs: 5000,
  connectTimeoutMs: 2000,
  onIdleError: () => {},
})
await store.migrate()
let requests: unknown[] = []
let lastId = 0n
const batches = Number(batchesText)
const warmUp = Math.ceil(batches / 10)
for (let batch = 0; batch < warmUp + batches; batch++) {
  if (batch === warmUp) process.stderr.write(`measured from ${performance.now()}\n`)
  const creates = Array.from({ length: 32 }, (_, n) =>
    store.createPet({ pet: { name: `pet ${batch}-${n}`, categoryId: 3n, status: 'available' } }),
  )
  for (const { pet } of await Promise.all(creates)) lastId = pet.id
  // The next requests' short-lived objects, about 256 KiB.
  for (let n = 0; n < 32; n++)
    requests = Array.from({ length: 100 }, (_, at) => ({ at, text: `request ${n}` }))
}
process.stderr.write(`last id ${lastId}, ${requests.length}\n`)
await store.close()
