import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'

/** What the store reports about its connections, for engines that pool them. */
export interface PoolStats {
  total: number
  idle: number
  waiting: number
}

/**
 * The service's Prometheus metrics, in a registry of its own (so tests and workers never share one).
 * Besides these: process and Node.js metrics, event-loop delay included (prom-client defaults).
 */
export function createMetrics(poolStats?: () => PoolStats) {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const metrics = {
    registry,
    requestDuration: new Histogram({
      name: 'petstore_http_request_duration_seconds',
      help: 'Time to answer a request, by operation and status.',
      labelNames: ['operation', 'status'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    petsCreated: new Counter({
      name: 'petstore_pets_created_total',
      help: 'Pets created (idempotent replays not counted).',
      registers: [registry],
    }),
    unauthorized: new Counter({
      name: 'petstore_unauthorized_total',
      help: 'Requests refused with 401.',
      registers: [registry],
    }),
    deprecatedCalls: new Counter({
      name: 'petstore_deprecated_calls_total',
      help: 'Calls of deprecated operations, by operation and API key name.',
      labelNames: ['operation', 'key'] as const,
      registers: [registry],
    }),
    storeDuration: new Histogram({
      name: 'petstore_store_duration_seconds',
      help: 'Time the store took, by store operation and outcome.',
      labelNames: ['operation', 'outcome'] as const,
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5],
      registers: [registry],
    }),
  }
  if (poolStats) {
    new Gauge({
      name: 'petstore_store_connections',
      help: 'Database connections of this instance, by state (open, idle, waiting callers).',
      labelNames: ['state'] as const,
      registers: [registry],
      collect() {
        const stats = poolStats()
        this.set({ state: 'open' }, stats.total)
        this.set({ state: 'idle' }, stats.idle)
        this.set({ state: 'waiting' }, stats.waiting)
      },
    })
  }
  return metrics
}

export type Metrics = ReturnType<typeof createMetrics>
