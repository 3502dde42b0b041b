import type { Server } from 'node:http'
import type { Logger } from 'pino'
import { admitPipelinedRaw } from '../http/pipelined-requests.ts'
import { closeStalledSends } from '../http/stalled-sends.ts'
import {
  METRICS_LISTENER_LIMITS,
  type MetricsListener,
  type MetricsSource,
  startMetricsServer,
} from '../metrics/metrics-server.ts'
import { namingListener } from './listener-failure.ts'

/**
 * The metrics listener as both starts open it (serve alone, the WORKERS supervisor): a failure named by
 * its settings; a scraper that stops reading let go, and one pipelining too many requests refused, as the
 * API's clients are (http/'s checks, which metrics/ may not import).
 */
export function openMetricsListener(
  source: MetricsSource,
  listener: MetricsListener,
  log: Pick<Logger, 'info' | 'error'>,
): Promise<Server> {
  const scraping = startMetricsServer(source, listener, {
    connections: (server) => closeStalledSends(server, METRICS_LISTENER_LIMITS.sendTimeoutMs, log),
    admits: admitPipelinedRaw,
    failed: (error) => log.error({ err: error }, 'a scrape got 500: collecting the metrics failed'),
  })
  return namingListener(scraping, 'METRICS_HOST:METRICS_PORT', listener)
}
