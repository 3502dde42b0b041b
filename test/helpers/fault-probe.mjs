// Preloaded (--import) by tests into the command's process: failures no code of the service catches. A
// response to a request sent with `x-test-fault: throw` (or `reject`) makes that request's own code throw
// from a timer (or reject a promise nobody awaits) as its head is written, with an error message that
// quotes the request's URL, as careless code does; SIGUSR2 does the same outside any request (TEST_FAULT
// says which). JavaScript so it strips no types.
import { ServerResponse } from 'node:http'

/** @param {string | undefined} kind @param {string} about */
function fail(kind, about = '') {
  if (kind === 'reject') {
    Promise.reject(new Error(`injected rejection${about}`))
    return
  }
  setImmediate(() => {
    throw new Error(`injected exception${about}`)
  })
}

const writeHead = ServerResponse.prototype.writeHead
ServerResponse.prototype.writeHead = function (...args) {
  const kind = this.req?.headers['x-test-fault']
  if (typeof kind === 'string') fail(kind, ` answering ${this.req.url}`)
  return Reflect.apply(writeHead, this, args)
}
process.on('SIGUSR2', () => fail(process.env.TEST_FAULT))
