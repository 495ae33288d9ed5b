/**
 * Event TTL: upstream stores Events with a lease of --event-ttl (default 1h), renewed by each write,
 * so an Event nobody touches for that long disappears. Here the last write time of each Event comes
 * from the watch feed (Events present at start count as written then), and expired ones are removed
 * from the store directly, as a lease expiry removes the key: no finalizers, a DELETED watch event.
 */
import type { Cacher } from '../storage/cacher.js';
import { type Store, StoreError } from '../storage/interface.js';
import type { CacheEvent } from '../storage/watch-cache.js';

export class EventTTLController {
  private readonly lastWrite = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Store,
    private readonly cacher: Cacher,
    private readonly prefix: string,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    if (this.ttlMs <= 0) return;
    const cache = this.cacher.cacheFor(this.prefix);
    const t0 = this.now();
    for (const o of cache.range(this.prefix)) this.lastWrite.set(o.key, t0);
    cache.addWatcher({
      onEvent: (ev: CacheEvent) => {
        if (ev.type === 'DELETED') this.lastWrite.delete(ev.object.key);
        else this.lastWrite.set(ev.object.key, this.now());
        return true;
      },
      close: () => undefined,
    });
    const every = Math.max(100, Math.min(this.ttlMs / 4, 60_000));
    this.timer = setInterval(() => void this.sweep(), every);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Removes every Event whose last write is older than the TTL. */
  async sweep(): Promise<number> {
    const deadline = this.now() - this.ttlMs;
    const cache = this.cacher.cacheFor(this.prefix);
    let removed = 0;
    for (const [key, at] of [...this.lastWrite]) {
      if (at > deadline) continue;
      const o = cache.get(key);
      if (!o) {
        this.lastWrite.delete(key);
        continue;
      }
      try {
        const { revision } = await this.store.delete(key, o.revision);
        this.cacher.notifyCommitted(revision);
        removed++;
      } catch (e) {
        // written or deleted meanwhile: the feed brings the new state
        if (!(e instanceof StoreError) || (e.code !== 'Conflict' && e.code !== 'NotFound')) throw e;
      }
    }
    return removed;
  }
}
