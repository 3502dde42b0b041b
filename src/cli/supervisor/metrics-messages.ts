/** One metric as prom-client's `getMetricsAsJSON` gives it (`type` is 'counter', 'histogram', …). */
export interface MetricJson {
  name: string
  help: string
  type: string
  aggregator?: string
  values: Array<{ value: number; labels: Record<string, string | number>; metricName?: string }>
}

/** A registry's metrics. */
export type MetricsJson = MetricJson[]

/** The supervisor asks a worker for its metrics. */
export interface MetricsRequest {
  type: 'petstore:metrics-request'
  requestId: number
}

/** A worker's metrics: the answer to a request, or (`final`) its last report before it exits. */
export interface MetricsReport {
  type: 'petstore:metrics-report'
  requestId?: number
  final?: boolean
  metrics?: MetricsJson
}

export function isMetricsRequest(message: unknown): message is MetricsRequest {
  return (message as MetricsRequest | null)?.type === 'petstore:metrics-request'
}

export function isMetricsReport(message: unknown): message is MetricsReport {
  return (message as MetricsReport | null)?.type === 'petstore:metrics-report'
}
