import assert from 'node:assert/strict'
import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, test } from 'node:test'
import type { LoadResult, LoadSpec } from '../bench/load.ts'
import { runLoad } from '../bench/load-runner.ts'

// The bench's load generator, against two real servers: each round's targets take turns of one slice.

interface Arrival {
  server: 'a' | 'b'
  atMs: number
}

async function listening(name: Arrival['server'], status: number, arrivals: Arrival[]): Promise<Server> {
  const server = createServer((_request, response) => {
    arrivals.push({ server: name, atMs: performance.now() })
    response.writeHead(status, { 'content-type': 'application/json' }).end('{}')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

const origin = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`

/** 2 s for each server (this process), in turns of about 1 s after a warm-up of 1 s, on 2 connections. */
const loadSpec = (servers: Server[]): LoadSpec => ({
  targets: servers.map((server) => ({ origin: origin(server), serverPid: process.pid })),
  requests: [{ method: 'GET', path: '/v1/pets', headers: {} }],
  expectedStatuses: [200],
  connections: 2,
  warmupS: 1,
  durationS: 2,
  sliceS: 1,
  // Longer than the bench's, so that a stall on a busy machine is never taken for one: 150 ms split a
  // turn in two with the test run beside two busy loops on the 2 cores.
  pauseMs: 600,
  fixedRateShare: 0,
})

/** Arrivals in stretches: at one server, with no pause of `gapMs` or more between two of them. */
function stretches(
  arrivals: Arrival[],
  gapMs: number,
): Array<{ server: Arrival['server']; requests: number }> {
  const found: Array<{ server: Arrival['server']; requests: number; lastMs: number }> = []
  for (const arrival of arrivals) {
    const last = found.at(-1)
    if (last?.server === arrival.server && arrival.atMs - last.lastMs < gapMs) {
      last.requests++
      last.lastMs = arrival.atMs
    } else {
      found.push({ server: arrival.server, requests: 1, lastMs: arrival.atMs })
    }
  }
  return found.map(({ server, requests }) => ({ server, requests }))
}

describe('the bench load generator, on a round of two targets', () => {
  test('when each has 2 s in turns of about 1 s, then both warm up (b, a), take turns A B then B A, pauses apart, and each is measured on its own turns', {
    timeout: 60_000,
  }, async () => {
    const arrivals: Arrival[] = []
    const a = await listening('a', 200, arrivals)
    const b = await listening('b', 401, arrivals)
    try {
      const spec = loadSpec([a, b])
      const [first, second] = (await runLoad(spec)) as [LoadResult, LoadResult]

      // Warm-ups in the reverse order of the first turn, then A B and B A, a pause before and after each.
      const seen = stretches(arrivals, spec.pauseMs / 2)
      assert.deepEqual(
        seen.map((stretch) => stretch.server),
        ['b', 'a', 'a', 'b', 'b', 'a'],
      )
      const measured = {
        a: (seen[2]?.requests ?? 0) + (seen[5]?.requests ?? 0),
        b: (seen[3]?.requests ?? 0) + (seen[4]?.requests ?? 0),
      }
      for (const [result, server] of [
        [first, 'a'],
        [second, 'b'],
      ] as const) {
        // Two turns of about 1 s; the four pauses (1.2 s) in no one's wall time.
        assert.ok(
          result.durationS >= 1.9 && result.durationS < 2.8,
          `two turns of about 1 s: ${result.durationS}`,
        )
        // A request in flight when a turn ends reaches the server and is never answered to the generator.
        assert.ok(
          Math.abs(result.requests - measured[server]) <= 2 * spec.connections,
          `${result.requests} answered against ${measured[server]} served`,
        )
        assert.ok(result.totalRequests > result.requests, 'the warm-up counted in the total')
        // Both servers are this process, the load generator (its child) counted with it: only the figures'
        // being there is checked, not which server they are.
        assert.ok(result.serverCpuUsPerRequest > 0 && Number.isFinite(result.serverCpuUsPerRequest))
        assert.ok(result.busy.server > 0 && result.busy.server < 4, `server busy ${result.busy.server}`)
        assert.ok(result.busy.load > 0 && result.busy.load < 4, `load busy ${result.busy.load}`)
        if (result.loadCoreIdle !== undefined) assert.ok(result.loadCoreIdle >= 0 && result.loadCoreIdle <= 1)
      }
      assert.equal(first.unexpectedStatus, 0)
      assert.ok(first.requestsPerSecond > 0)
      assert.equal(second.unexpectedStatus, second.requests, 'a 401 is not what the scenario expects')
      assert.equal(second.requestsPerSecond, 0, 'unexpected answers are no throughput')
    } finally {
      a.close()
      b.close()
      a.closeAllConnections()
      b.closeAllConnections()
    }
  })

  test('when a request is still unanswered as its turn ends, then the largest latency counts it at its age then', {
    timeout: 60_000,
  }, async () => {
    // Answers at once, but for the first request of the measured turns (the first after the warm-up's
    // pause), which it holds: the load generator drops it when the turn ends, about 1 s later.
    let lastArrivalMs: number | undefined
    let held: ServerResponse | undefined
    const server = createServer((_request, response) => {
      const now = performance.now()
      const afterPause = lastArrivalMs !== undefined && now - lastArrivalMs > 300
      lastArrivalMs = now
      if (afterPause && held === undefined) held = response
      else response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const spec = loadSpec([server])
      const [result] = (await runLoad(spec)) as [LoadResult]
      assert.ok(held !== undefined, 'a request was held')
      assert.equal(result.socketErrors, 0)
      assert.ok(result.latencyMs.p99 < 500, `the answered ones are quick: p99 ${result.latencyMs.p99} ms`)
      assert.ok(result.latencyMs.max >= 800, `the held one, about a turn: max ${result.latencyMs.max} ms`)
    } finally {
      held?.destroy()
      server.close()
      server.closeAllConnections()
    }
  })
})

describe('the bench load generator, at a fixed rate', () => {
  const atFixedRate = (servers: Server[]): LoadSpec => ({ ...loadSpec(servers), fixedRateShare: 0.5 })

  test("when two targets are measured, then both are sent one rate, half the slower one's req/s, every request due answered", {
    timeout: 60_000,
  }, async () => {
    const arrivals: Arrival[] = []
    const a = await listening('a', 200, arrivals)
    const b = await listening('b', 200, arrivals)
    try {
      const results = (await runLoad(atFixedRate([a, b]))) as [LoadResult, LoadResult]
      const rate = Math.round(0.5 * Math.min(...results.map((result) => result.requestsPerSecond)))
      // Half the measured 2 s, in two turns of 0.5 s each.
      const due = 2 * Math.round(rate * 0.5)
      for (const { fixedRate } of results) {
        assert.ok(fixedRate !== undefined, 'measured at a fixed rate')
        assert.equal(fixedRate.ratePerS, rate)
        assert.equal(fixedRate.requests, due, 'every request due, answered')
        assert.equal(fixedRate.unexpectedStatus + fixedRate.socketErrors, 0)
        assert.ok(fixedRate.latencyMs.p50 > 0 && fixedRate.latencyMs.p50 <= fixedRate.latencyMs.p99)
      }
    } finally {
      for (const server of [a, b]) {
        server.close()
        server.closeAllConnections()
      }
    }
  })

  test('when a server stalls 100 ms in every 400, then the requests due in a stall count from their due time: a p99 near the stall, which a closed loop on two connections does not see', {
    timeout: 60_000,
  }, async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    // The stall is this process's event loop, the server's: nothing is answered while it lasts.
    const stalls = setInterval(() => {
      const until = performance.now() + 100
      while (performance.now() < until) {}
    }, 300)
    try {
      const [result] = (await runLoad(atFixedRate([server]))) as [LoadResult]
      const { fixedRate } = result
      assert.ok(fixedRate !== undefined, 'measured at a fixed rate')
      // A quarter of the requests fall due in a stall; the last of them waited nearly all of it.
      assert.ok(fixedRate.latencyMs.p99 >= 50, `p99 at a fixed rate ${fixedRate.latencyMs.p99} ms`)
      assert.ok(fixedRate.latencyMs.max >= 80, `max at a fixed rate ${fixedRate.latencyMs.max} ms`)
      assert.equal(fixedRate.socketErrors, 0)
      // Closed loop, two connections: two requests wait in each stall, of the thousands between them.
      assert.ok(result.latencyMs.p99 < fixedRate.latencyMs.p99, `closed-loop p99 ${result.latencyMs.p99} ms`)
    } finally {
      clearInterval(stalls)
      server.close()
      server.closeAllConnections()
    }
  })

  test('when a server answers in chunks, then they are read to their end; when it cuts every connection at a fixed rate, then each request fails as a socket error and the turns still end', {
    timeout: 60_000,
  }, async () => {
    // Pauses of the spec's (600 ms) before the fixed rate's turns: after the warm-up, between the two
    // measured turns, and after them.
    let cutAfterPauses = Number.POSITIVE_INFINITY
    let pauses = 0
    let lastArrivalMs: number | undefined
    const server = createServer((request, response) => {
      const now = performance.now()
      if (lastArrivalMs !== undefined && now - lastArrivalMs > 300) pauses++
      lastArrivalMs = now
      if (pauses >= cutAfterPauses) {
        request.socket.destroy()
        return
      }
      // Written in two pieces: Node sends it in chunks.
      response.writeHead(200, { 'content-type': 'application/json' })
      response.write('{"a":')
      setImmediate(() => response.end('1}'))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const [chunked] = (await runLoad(atFixedRate([server]))) as [LoadResult]
      assert.ok(chunked.fixedRate !== undefined, 'measured at a fixed rate')
      assert.equal(chunked.fixedRate.socketErrors, 0)
      assert.ok(chunked.fixedRate.requests > 0)
      pauses = 0
      lastArrivalMs = undefined
      cutAfterPauses = 3
      const [cutOff] = (await runLoad(atFixedRate([server]))) as [LoadResult]
      assert.equal(cutOff.socketErrors, 0, 'the measured turns were answered')
      assert.ok(cutOff.fixedRate !== undefined, 'measured at a fixed rate')
      assert.equal(cutOff.fixedRate.requests, 0)
      assert.ok(cutOff.fixedRate.socketErrors > 0)
    } finally {
      server.close()
      server.closeAllConnections()
    }
  })
})
