import type { Registry } from 'prom-client'
import { isMetricsRequest, type MetricsJson, type MetricsReport } from './metrics-messages.ts'

export interface SharedMetrics {
  /** Sends this worker's metrics one last time, so the supervisor keeps its counts once it has exited. */
  reportFinal(): Promise<void>
}

/** Sends `report` to the supervisor; resolves once it is handed to the channel (or could not be). */
function send(report: MetricsReport): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve()
    process.send(report, undefined, {}, () => resolve())
  })
}

/** Makes this cluster worker answer its supervisor's metrics requests (cluster-metrics.ts) from `registry`. */
export function shareMetricsWithPrimary(registry: Registry): SharedMetrics {
  const report = async (fields: Omit<MetricsReport, 'type' | 'metrics'>) => {
    // Unreadable metrics are reported as none: the supervisor keeps what it last had from this worker.
    const metrics = (await registry.getMetricsAsJSON().catch(() => undefined)) as MetricsJson | undefined
    await send({ type: 'petstore:metrics-report', ...fields, ...(metrics ? { metrics } : {}) })
  }
  process.on('message', (message) => {
    if (isMetricsRequest(message)) void report({ requestId: message.requestId })
  })
  return { reportFinal: () => report({ final: true }) }
}
