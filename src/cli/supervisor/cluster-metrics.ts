import cluster, { type Worker } from 'node:cluster'
import { AggregatorRegistry, prometheusContentType, type Registry } from 'prom-client'
import type { MetricsSource } from '../../metrics/metrics-server.ts'
import { isMetricsReport, type MetricsJson, type MetricsRequest } from './metrics-messages.ts'

// A worker that has not answered a scrape by then is counted with its last report, not waited for.
const ANSWER_TIMEOUT_MS = 2000

/** The metrics that only grow and are summed across workers (counters, histograms): a worker's legacy. */
function cumulative(metrics: MetricsJson): MetricsJson {
  return metrics.filter(
    (metric) =>
      (metric.type === 'counter' || metric.type === 'histogram') && (metric.aggregator ?? 'sum') === 'sum',
  )
}

// Gauges that are each process's limit, the same in every worker: their sum would be no process's.
const PER_PROCESS_LIMITS = new Set(['process_max_fds'])

/** A worker's metrics with each per-process limit aggregated as the largest, not summed. */
function withLimitsKept(metrics: MetricsJson): MetricsJson {
  return metrics.map((metric) =>
    PER_PROCESS_LIMITS.has(metric.name) ? { ...metric, aggregator: 'max' } : metric,
  )
}

/** Several registries' metrics summed into one, at once (prom-client's aggregation, read synchronously). */
function summed(registries: MetricsJson[]): MetricsJson {
  return AggregatorRegistry.aggregate(registries)
    .getMetricsAsArray()
    .map((metric) => {
      const { name, help, type, aggregator, values } = metric as unknown as MetricsJson[number]
      return { name, help, type, aggregator, values }
    })
}

/**
 * The workers' metrics summed, with `own` (the supervisor's counts), for the supervisor's /metrics. A gone
 * worker's counters and histograms stay in a retained base, so totals never fall when it is replaced
 * (docs/decisions.md, "Summed counters under WORKERS stay monotonic").
 */
export class ClusterMetrics implements MetricsSource {
  readonly contentType = prometheusContentType
  readonly #own: Registry
  readonly #latest = new Map<number, MetricsJson>()
  #retired: MetricsJson = []
  #nextRequestId = 0
  readonly #waiting = new Map<number, { workers: Set<number>; done: () => void }>()

  constructor(own: Registry) {
    this.#own = own
    cluster.on('message', (worker, message) => this.#received(worker, message))
    cluster.on('disconnect', (worker) => this.#retire(worker))
  }

  async metrics(): Promise<string> {
    const [own] = await Promise.all([this.#own.getMetricsAsJSON(), this.#refresh()])
    const workers = [...this.#latest.values()].map(withLimitsKept)
    return AggregatorRegistry.aggregate([this.#retired, ...workers, own]).metrics()
  }

  /** Asks every connected worker for its metrics; resolves when all answered, or after ANSWER_TIMEOUT_MS. */
  #refresh(): Promise<void> {
    const requestId = this.#nextRequestId++
    const request: MetricsRequest = { type: 'petstore:metrics-request', requestId }
    const workers = new Set<number>()
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.#waiting.delete(requestId)
        resolve()
      }
      const timer = setTimeout(done, ANSWER_TIMEOUT_MS)
      this.#waiting.set(requestId, { workers, done })
      for (const worker of Object.values(cluster.workers ?? {})) {
        if (!worker?.isConnected()) continue
        workers.add(worker.id)
        // With a callback, a channel closing meanwhile is reported here rather than thrown as an event.
        worker.send(request, undefined, (error) => {
          if (error) this.#answered(requestId, worker.id)
        })
      }
      if (workers.size === 0) done()
    })
  }

  #received(worker: Worker, message: unknown): void {
    if (!isMetricsReport(message)) return
    if (message.metrics) this.#latest.set(worker.id, message.metrics)
    if (message.requestId !== undefined) this.#answered(message.requestId, worker.id)
  }

  #answered(requestId: number, workerId: number): void {
    const waiting = this.#waiting.get(requestId)
    if (waiting?.workers.delete(workerId) && waiting.workers.size === 0) waiting.done()
  }

  #retire(worker: Worker): void {
    const last = this.#latest.get(worker.id)
    this.#latest.delete(worker.id)
    if (last) this.#retired = summed([this.#retired, cumulative(last)])
    for (const requestId of this.#waiting.keys()) this.#answered(requestId, worker.id)
  }
}
