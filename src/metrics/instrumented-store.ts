import type { Store } from '../store/store.ts'
import type { Metrics } from './metrics.ts'

type Method = (...args: unknown[]) => unknown

/** A store method and what calls it timed: made once per method, not per call. */
interface Timed {
  method: Method
  timed: (...args: unknown[]) => Promise<unknown>
}

/**
 * The same store, timing every call into `petstore_store_duration_seconds`. Done once around the port, so
 * engines stay free of metrics and every engine is measured the same way. Each method's timed form and
 * its series are made once (docs/decisions.md, "Per-request cost").
 */
export function instrumentStore(store: Store, metrics: Pick<Metrics, 'storeDuration'>): Store {
  const timedMethods = new Map<PropertyKey, Timed>()
  const timedFormOf = (target: Store, property: PropertyKey, method: Method): Timed['timed'] => {
    const kept = timedMethods.get(property)
    // A method replaced since (a test's stand-in) gets a timed form of its own.
    if (kept?.method === method) return kept.timed
    const operation = String(property)
    // Made on their first observation: a series shows only once it has counted something.
    type Series = ReturnType<Metrics['storeDuration']['labels']>
    let ok: Series | undefined
    let failed: Series | undefined
    const timed = async (...args: unknown[]) => {
      const started = performance.now()
      try {
        const result = await method.apply(target, args)
        ok ??= metrics.storeDuration.labels({ operation, outcome: 'ok' })
        ok.observe((performance.now() - started) / 1000)
        return result
      } catch (error) {
        failed ??= metrics.storeDuration.labels({ operation, outcome: 'error' })
        failed.observe((performance.now() - started) / 1000)
        throw error
      }
    }
    timedMethods.set(property, { method, timed })
    return timed
  }
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function' || property === 'close' || property === 'poolStats') {
        return typeof value === 'function' ? value.bind(target) : value
      }
      return timedFormOf(target, property, value as Method)
    },
  })
}
