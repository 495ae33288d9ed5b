/**
 * Cacher: the main thread's view of the store. It loads every registered resource's state at one
 * revision, then follows the store's ordered event feed, routing each event to the WatchCache of its
 * key prefix and advancing every cache to the feed's revision. Reads that must be consistent or "not
 * older than" a revision wait here until the caches reach it (read-your-writes across threads), and
 * give up after a bounded wait with 504 Too large resource version, as upstream's cacher does.
 */
import { GRADUAL_SLICE_MS } from '../api/gradual.js';
import { type MaybePromise, then } from '../api/maybe-async.js';
import { errors } from '../api/status.js';
import type { Store, StoreEvent, StoreWatch } from './interface.js';
import { WatchCache, type WatchCacheOptions } from './watch-cache.js';

interface Waiter {
  revision: number;
  resolve: () => void;
  timer: NodeJS.Timeout;
}

export class Cacher {
  private readonly caches = new Map<string, WatchCache>();
  /** Caches being loaded after start, with the events for them that arrived meanwhile. */
  private readonly loading = new Map<string, StoreEvent[]>();
  /** The loads behind `loading`, for readers that must wait for a cache that is on its way. */
  private readonly loads = new Map<string, Promise<WatchCache>>();
  private watch: StoreWatch | undefined;
  private waiters: Waiter[] = [];
  /** Revision every cache is synced to. */
  revision = 0;
  /** Highest revision a writer of this process has reported as committed (acknowledged to its client). */
  private acknowledged = 0;
  private failed: Error | undefined;
  /** The periodic second look at entries that could not be read back (rereadUnreadable). */
  private rereadTimer: NodeJS.Timeout | undefined;
  private rereading = false;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly waitLimitMs = 3000,
    private readonly rereadEveryMs = 5000,
  ) {}

  /** Registers a resource's cache; call before start(). */
  register(opts: WatchCacheOptions): WatchCache {
    const c = new WatchCache(opts);
    this.caches.set(opts.prefix, c);
    return c;
  }

  /**
   * Adds a resource's cache while the feed runs (a type that appeared): its state is read at the
   * revision the caches follow, events for it that arrive meanwhile wait, then it follows the feed
   * like the others. Before start() this is register().
   */
  add(opts: WatchCacheOptions): Promise<WatchCache> {
    if (!this.watch) return Promise.resolve(this.register(opts));
    const load = this.load(opts);
    this.loads.set(opts.prefix, load);
    const forget = () => {
      if (this.loads.get(opts.prefix) === load) this.loads.delete(opts.prefix);
    };
    load.then(forget, forget);
    return load;
  }

  /** The cache of `prefix` once it is loaded (a type that just appeared is still loading). */
  cached(prefix: string): Promise<WatchCache> {
    const c = this.caches.get(prefix);
    if (c) return Promise.resolve(c);
    return this.loads.get(prefix) ?? Promise.reject(new Error(`no watch cache for ${prefix}`));
  }

  private async load(opts: WatchCacheOptions): Promise<WatchCache> {
    const pending: StoreEvent[] = [];
    this.loading.set(opts.prefix, pending);
    try {
      const at = this.revision;
      const res = await this.store.list(opts.prefix, { revision: at, keepUnreadable: true });
      const c = new WatchCache(opts);
      c.reset(res.items, at);
      for (const ev of pending) if (ev.revision > at) applyEvent(c, ev);
      c.advance(this.revision);
      this.caches.set(opts.prefix, c);
      return c;
    } finally {
      this.loading.delete(opts.prefix);
    }
  }

  /** Drops a resource's cache (a type that went away): its watchers are closed. */
  remove(prefix: string): void {
    const c = this.caches.get(prefix);
    if (!c) return;
    this.caches.delete(prefix);
    c.reset([], this.revision);
  }

  has(prefix: string): boolean {
    return this.caches.has(prefix);
  }

  cacheFor(prefix: string): WatchCache {
    const c = this.caches.get(prefix);
    if (!c) throw new Error(`no watch cache for ${prefix}`);
    return c;
  }

  /** Loads every cache at one revision and starts following the feed. */
  async start(): Promise<void> {
    const revision = await this.store.currentRevision();
    for (const c of this.caches.values()) {
      const res = await this.store.list(c.prefix, { revision, keepUnreadable: true });
      c.reset(res.items, revision);
    }
    this.revision = revision;
    this.acknowledged = Math.max(this.acknowledged, revision);
    this.watch = this.store.watch(
      revision,
      (events, rev) => this.onEvents(events, rev),
      (err) => this.onError(err),
      // the caches hold each key's current value themselves
      { prevValues: false },
    );
    this.rereadTimer ??= setInterval(() => void this.rereadUnreadable(), this.rereadEveryMs).unref();
    void this.describeGradually();
  }

  /** After a load, every cached object described in the background, a cache after another, a slice of the thread at a time. */
  private async describeGradually(): Promise<void> {
    for (const c of [...this.caches.values()]) {
      if (this.stopped) return;
      await c.describeGradually(GRADUAL_SLICE_MS, () => this.stopped);
    }
  }

  /**
   * Reads entries that could not be read back again, a few at a time: a value whose KMS plugin was
   * down or slow, or whose key a reloaded configuration brought, takes its place once it reads (as
   * upstream's watch cache recovers by listing again), with no event, since the object did not change.
   */
  private async rereadUnreadable(): Promise<void> {
    if (this.rereading) return;
    this.rereading = true;
    try {
      for (const c of this.caches.values()) {
        for (const key of c.unreadableKeys(100)) {
          const kv = await this.store.get(key).catch(() => null);
          if (kv && !kv.unreadable) c.readableAgain(key, kv.value, kv.modRevision);
        }
      }
    } finally {
      this.rereading = false;
    }
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.rereadTimer);
    this.watch?.stop();
    for (const w of this.waiters) clearTimeout(w.timer);
    this.waiters = [];
  }

  /** Whether the feed is healthy (for readiness). */
  get healthy(): boolean {
    return this.failed === undefined && this.watch !== undefined;
  }

  /**
   * The cache whose registered prefix starts `key`. Prefixes are what the registry declared; no two
   * are prefixes of one another, so the first that matches at a `/` boundary is the one.
   */
  private route(key: string): WatchCache | StoreEvent[] | undefined {
    for (let i = key.indexOf('/', 1); i >= 0; i = key.indexOf('/', i + 1)) {
      const prefix = key.slice(0, i + 1);
      const c = this.caches.get(prefix) ?? this.loading.get(prefix);
      if (c) return c;
    }
    return undefined;
  }

  private onEvents(events: StoreEvent[], revision: number): void {
    for (const ev of events) {
      const c = this.route(ev.key);
      if (!c) continue;
      if (Array.isArray(c)) c.push(ev);
      else applyEvent(c, ev);
    }
    for (const c of this.caches.values()) c.advance(revision);
    this.revision = revision;
    if (this.waiters.length) this.releaseWaiters();
  }

  private onError(err: Error): void {
    this.failed = err;
    // A broken feed cannot be trusted: restart from a fresh list.
    this.watch?.stop();
    this.watch = undefined;
    setTimeout(() => {
      this.failed = undefined;
      this.start().catch((e: Error) => this.onError(e));
    }, 100).unref();
  }

  private releaseWaiters(): void {
    const keep: Waiter[] = [];
    for (const w of this.waiters) {
      if (w.revision <= this.revision) {
        clearTimeout(w.timer);
        w.resolve();
      } else keep.push(w);
    }
    this.waiters = keep;
  }

  /**
   * Resolves once the caches reflect `revision`; after the wait limit rejects with
   * 504 Too large resource version (Retry-After 1).
   */
  waitFor(revision: number): MaybePromise<void> {
    if (revision <= this.revision) return;
    this.store.syncFeeds?.();
    if (revision <= this.revision) return;
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        revision,
        resolve,
        timer: setTimeout(() => {
          this.waiters = this.waiters.filter((x) => x !== w);
          reject(errors.tooLargeResourceVersion(revision, this.revision, 1));
        }, this.waitLimitMs),
      };
      this.waiters.push(w);
    });
  }

  /**
   * Waits until the caches hold every write acknowledged before this call (a consistent read); answers
   * without waiting when the store can report its revision locally and the cache already has it.
   */
  syncConsistent(): MaybePromise<number> {
    // every write a client can have seen was reported here before its response was sent
    if (this.store.singleProcess) {
      const known = Math.max(this.acknowledged, this.revision);
      return then(this.waitFor(known), () => known);
    }
    if (this.store.currentRevisionSync) {
      const current = this.store.currentRevisionSync();
      return then(this.waitFor(current), () => current);
    }
    return this.store.currentRevision().then((current) => then(this.waitFor(current), () => current));
  }

  /** Hint from a writer that `revision` is committed. */
  notifyCommitted(revision: number): void {
    if (revision > this.acknowledged) this.acknowledged = revision;
    if (revision > this.revision) this.store.notifyCommitted?.(revision);
  }
}

function applyEvent(c: WatchCache, ev: StoreEvent): void {
  if (ev.type === 'put') c.applyPut(ev.key, ev.value!, ev.revision, ev.unreadable);
  else c.applyDelete(ev.key, ev.revision);
}
