import type { Store } from '../store/store.ts'
import type { Metrics } from './metrics.ts'

/**
 * The same store, timing every call into `petstore_store_duration_seconds`. Done once around the port, so
 * engines stay free of metrics and every engine is measured the same way.
 */
export function instrumentStore(store: Store, metrics: Pick<Metrics, 'storeDuration'>): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function' || property === 'close' || property === 'poolStats') {
        return typeof value === 'function' ? value.bind(target) : value
      }
      return async (...args: unknown[]) => {
        const stop = metrics.storeDuration.startTimer({ operation: String(property) })
        try {
          const result = await value.apply(target, args)
          stop({ outcome: 'ok' })
          return result
        } catch (error) {
          stop({ outcome: 'error' })
          throw error
        }
      }
    },
  })
}
