// Loaded into every test file's process (test-process.ts): its HTTP clients close a connection once it has
// been idle for 100 ms. A server's drain waits for its clients to close their idle kept-alive connections
// (src/server.ts: cutting one races a request being sent on it), which fetch does 3 s after its last
// answer (the server's `Keep-Alive: timeout=5` less undici's 2 s margin) and node:http's agent 4 s after:
// each stop of a server the test had called waited that long (docs/decisions.md, "The test run's length").
import http from 'node:http'
import { Agent, setGlobalDispatcher } from 'undici'

const IDLE_MS = 100

setGlobalDispatcher(new Agent({ keepAliveTimeout: IDLE_MS, keepAliveMaxTimeout: IDLE_MS }))
http.globalAgent = new http.Agent({ keepAlive: true, timeout: IDLE_MS })
