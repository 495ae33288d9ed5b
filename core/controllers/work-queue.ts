/**
 * A keyed work queue for controllers, with client-go's workqueue guarantees: a key waiting in the queue
 * is there once however often it is added; a key added while a worker holds it runs again once that
 * worker is done (never twice at the same time); a key that failed comes back after a delay that
 * doubles with each consecutive failure (reset by `forget`), so work that cannot succeed yet is retried
 * slowly instead of spinning.
 */

export interface WorkQueueOptions {
  /** Delay after the first failure of a key. */
  baseDelayMs?: number;
  /** Longest delay between retries of a key. */
  maxDelayMs?: number;
}

export class WorkQueue<T> {
  private readonly order: string[] = [];
  /** Payload of each key that is queued (or waiting to be re-queued after its worker finishes). */
  private readonly payloads = new Map<string, T>();
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private waiting: ((v: { key: string; item: T } | undefined) => void)[] = [];
  private closed = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(o: WorkQueueOptions = {}) {
    this.baseDelayMs = o.baseDelayMs ?? 50;
    this.maxDelayMs = o.maxDelayMs ?? 300_000;
  }

  get length(): number {
    return this.order.length;
  }

  add(key: string, item: T): void {
    if (this.closed) return;
    this.payloads.set(key, item);
    if (this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.push(key);
  }

  /** Adds the key again after its failure delay (which doubles with each call until `forget`); returns the delay. */
  addRateLimited(key: string, item: T): number {
    if (this.closed) return 0;
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    const delay = Math.min(this.baseDelayMs * 2 ** Math.min(n - 1, 30), this.maxDelayMs);
    if (this.timers.has(key)) return delay; // an earlier retry is already due
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key, item);
    }, delay);
    timer.unref();
    this.timers.set(key, timer);
    return delay;
  }

  /** Consecutive failures of a key so far. */
  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** The key succeeded: its next failure starts from the base delay again. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** The next key to work on; waits for one; undefined once the queue is shut down. */
  get(): Promise<{ key: string; item: T } | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    const next = this.take();
    if (next) return Promise.resolve(next);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** The worker is finished with `key`; if it was added meanwhile it is queued again. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key) && !this.closed) this.push(key);
  }

  shutDown(): void {
    this.closed = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    const waiting = this.waiting;
    this.waiting = [];
    for (const w of waiting) w(undefined);
  }

  private push(key: string): void {
    const w = this.waiting.shift();
    if (w) {
      this.order.push(key);
      w(this.take());
      return;
    }
    this.order.push(key);
  }

  private take(): { key: string; item: T } | undefined {
    const key = this.order.shift();
    if (key === undefined) return undefined;
    const item = this.payloads.get(key)!;
    this.payloads.delete(key);
    this.dirty.delete(key);
    this.processing.add(key);
    return { key, item };
  }
}
