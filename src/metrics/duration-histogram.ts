import type { Metric, Registry } from 'prom-client'

export interface DurationHistogramOptions<Label extends string> {
  name: string
  help: string
  labelNames: readonly Label[]
  /** Upper bounds in seconds, ascending. */
  buckets: readonly number[]
  registers: Registry[]
}

/** One sample as prom-client's registry reads it. */
interface Sample {
  metricName: string
  labels: Readonly<Record<string, string | number>>
  value: number
}

interface Series {
  labels: Readonly<Record<string, string>>
  /** Observations per bucket (not cumulative); the last slot counts those above every bound. */
  counts: Float64Array
  sum: number
  count: number
}

/**
 * A Prometheus histogram for per-request durations, read by prom-client's registry and its cluster
 * aggregation as its own Histogram is, for a fraction of the cost of an observation (docs/decisions.md,
 * "Request-duration histogram of our own").
 */
export class DurationHistogram<Label extends string> {
  readonly name: string
  readonly help: string
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  readonly #buckets: readonly number[]
  readonly #labelNames: readonly Label[]
  readonly #series = new Map<string, Series>()

  constructor({ name, help, labelNames, buckets, registers }: DurationHistogramOptions<Label>) {
    this.name = name
    this.help = help
    this.#labelNames = labelNames
    this.#buckets = buckets
    // The registry reads any object with a name and get(); its types list only prom-client's own classes.
    for (const registry of registers) registry.registerMetric(this as unknown as Metric)
  }

  /** The series of one set of label values; keep it, observing through it is the cheap path. */
  labels(values: Readonly<Record<Label, string>>): { observe(seconds: number): void } {
    const labels = Object.fromEntries(this.#labelNames.map((name) => [name, values[name]]))
    const key = JSON.stringify(this.#labelNames.map((name) => values[name]))
    let series = this.#series.get(key)
    if (series === undefined) {
      series = { labels, counts: new Float64Array(this.#buckets.length + 1), sum: 0, count: 0 }
      this.#series.set(key, series)
    }
    const found = series
    const buckets = this.#buckets
    return {
      observe(seconds: number) {
        let bucket = 0
        while (bucket < buckets.length && seconds > (buckets[bucket] as number)) bucket++
        found.counts[bucket] = (found.counts[bucket] as number) + 1
        found.sum += seconds
        found.count++
      },
    }
  }

  /** prom-client's format: per series, cumulative `_bucket` values by `le`, then `_sum` and `_count`. */
  async get(): Promise<{
    name: string
    help: string
    type: 'histogram'
    aggregator: 'sum'
    values: Sample[]
  }> {
    const values: Sample[] = []
    for (const { labels, counts, sum, count } of this.#series.values()) {
      let cumulative = 0
      this.#buckets.forEach((bound, index) => {
        cumulative += counts[index] as number
        values.push({
          metricName: `${this.name}_bucket`,
          labels: { le: bound, ...labels },
          value: cumulative,
        })
      })
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...labels }, value: count })
      values.push({ metricName: `${this.name}_sum`, labels: { ...labels }, value: sum })
      values.push({ metricName: `${this.name}_count`, labels: { ...labels }, value: count })
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }

  /** Starts every series again from zero (`registry.resetMetrics()`). */
  reset(): void {
    for (const series of this.#series.values()) {
      series.counts.fill(0)
      series.sum = 0
      series.count = 0
    }
  }
}
