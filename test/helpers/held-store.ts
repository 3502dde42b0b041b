import type { Store } from '../../src/store/store.ts'

export interface HeldStore {
  /** The store to give the app: its first createPet waits for `release()`; later ones go straight through. */
  store: Store
  /** Resolves once the first createPet has reached the store (and is being held there). */
  entered: Promise<void>
  /** Lets the held createPet continue to the real store. Safe to call more than once. */
  release(): void
}

/**
 * A real store whose first create is held inside the store until the test releases it, so a test can act
 * deterministically while a request is still running (no race to win, no sleep to guess).
 */
export function holdFirstCreate(target: Store): HeldStore {
  let release = () => {}
  const released = new Promise<void>((resolve) => {
    release = resolve
  })
  let enter = () => {}
  const entered = new Promise<void>((resolve) => {
    enter = resolve
  })
  let held = false
  const store = new Proxy(target, {
    get(store, property, receiver) {
      if (property === 'createPet') {
        return async (...args: Parameters<Store['createPet']>) => {
          if (!held) {
            held = true
            enter()
            await released
          }
          return store.createPet(...args)
        }
      }
      const value = Reflect.get(store, property, receiver)
      return typeof value === 'function' ? value.bind(store) : value
    },
  })
  return { store, entered, release }
}
