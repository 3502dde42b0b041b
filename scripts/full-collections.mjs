// Preloaded (--import, with --expose-gc) by the soak into the service: a full collection every 3 s, so that
// the live heap after one (the figure a leak makes grow) is measured in every run, however short; left
// alone, a service at a steady 400 requests a second made too few for it after warm-up. JavaScript so it
// strips no types.
setInterval(() => globalThis.gc?.(), 3000).unref()
