import assert from 'node:assert/strict'

/** The Error body of the 409 a create gets while one with its Idempotency-Key runs on the same instance. */
export const IN_FLIGHT_BODY = {
  code: 'idempotency_key_in_flight',
  message: 'a request with this Idempotency-Key is still being processed',
  status: 409,
}

export interface CreateAnswer {
  status: number
  text: string
  headers: Headers
}

/**
 * Checks the answers to creates that all sent one Idempotency-Key with one body: exactly one created the
 * pet (201 without `Idempotent-Replayed`), every other 201 replays it byte for byte, and every other
 * answer is the in-flight 409 with its exact Error body and `Retry-After`. Anything else fails.
 */
export function assertOneCreatedRestReplayedOrInFlight(answers: readonly CreateAnswer[]): void {
  const creators = answers.filter(
    (answer) => answer.status === 201 && !answer.headers.has('idempotent-replayed'),
  )
  const statuses = answers.map((answer) => answer.status).join(', ')
  assert.equal(creators.length, 1, `exactly one answer created the pet (statuses ${statuses})`)
  const creator = creators[0] as CreateAnswer
  for (const answer of answers) {
    if (answer === creator) continue
    if (answer.status === 201) {
      assert.equal(answer.text, creator.text, 'a replay is the first answer byte for byte')
      assert.equal(answer.headers.get('idempotent-replayed'), 'true')
      continue
    }
    assert.equal(answer.status, 409, answer.text)
    assert.deepEqual(JSON.parse(answer.text), IN_FLIGHT_BODY)
    assert.equal(answer.headers.get('retry-after'), '1')
  }
}
