/**
 * A pass over a large set of items a slice of the thread at a time, yielding to the event loop
 * between slices, so that requests are served meanwhile (a pass over 100,000 objects in one go held
 * the thread for most of a second). Used for the background passes over a kind's objects: a lister's
 * new index and its candidates (core/registry/lister.ts), the watch cache's describing of every
 * object after a load (core/storage/watch-cache.ts, cacher.ts).
 */

/** The longest a background pass holds the thread before it lets requests in. */
export const GRADUAL_SLICE_MS = 5;

export interface GradualOptions<T> {
  /** The longest one slice holds the thread (GRADUAL_SLICE_MS by default). */
  sliceMs?: number;
  /** Asked before each item: true ends the pass there (the promise resolves). */
  stopped?: () => boolean;
  /** Told of an item whose visit threw: the pass goes on with the next item. */
  failed: (item: T, err: Error) => void;
}

/** The clock is read once every this many items: reading it costs more than most visits. */
const ITEMS_PER_CLOCK_READ = 256;

/**
 * Calls `visit` with each item, `sliceMs` of the thread at a time, from the next turn of the event
 * loop on (not even the first slice now: a server starting holds its thread for none of them).
 * Resolves when every item was visited or `stopped` said so; never rejects.
 */
export function gradually<T>(items: Iterable<T>, visit: (item: T) => void, opts: GradualOptions<T>): Promise<void> {
  const sliceMs = opts.sliceMs ?? GRADUAL_SLICE_MS;
  const it = items[Symbol.iterator]();
  let visited = 0;
  return new Promise((resolve) => {
    const slice = (): void => {
      const until = performance.now() + sliceMs;
      for (;;) {
        if (opts.stopped?.()) return resolve();
        const next = it.next();
        if (next.done) return resolve();
        try {
          visit(next.value);
        } catch (err) {
          opts.failed(next.value, err as Error);
        }
        if (++visited % ITEMS_PER_CLOCK_READ === 0 && performance.now() >= until) return void setImmediate(slice);
      }
    };
    setImmediate(slice);
  });
}
