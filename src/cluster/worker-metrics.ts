import { AggregatorRegistry, type Registry } from 'prom-client'

/**
 * Makes this cluster worker answer its supervisor's metrics requests from `registry`. prom-client only
 * listens for those requests once an AggregatorRegistry has been constructed in the process: setting the
 * registries alone leaves every scrape of the supervisor waiting 5 s and failing.
 */
export function shareMetricsWithPrimary(registry: Registry): void {
  AggregatorRegistry.setRegistries([registry])
  new AggregatorRegistry()
}
