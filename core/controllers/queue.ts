/**
 * A small work queue for controllers (upstream's workqueue): keys are deduplicated while waiting, one
 * key is synced at a time, a failed sync is retried after a growing delay, and a key can be added
 * after a delay (a token that expires later). Syncs start on a later tick, never inside the lister
 * event that queued them.
 */
export class WorkQueue {
  private readonly waiting = new Set<string>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly failures = new Map<string, number>();
  private running = false;
  private stopped = false;

  constructor(
    private readonly name: string,
    private readonly sync: (key: string) => Promise<void>,
    private readonly retryBaseMs = 200,
    private readonly retryMaxMs = 30_000,
  ) {}

  add(key: string): void {
    if (this.stopped) return;
    this.waiting.add(key);
    if (!this.running) setImmediate(() => void this.drain());
  }

  /** Adds `key` once `ms` have passed (a later call for the same key replaces the earlier one). */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timers.get(key));
    const t = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, Math.min(Math.max(ms, 0), 2 ** 31 - 1));
    t.unref();
    this.timers.set(key, t);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    this.waiting.clear();
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (!this.stopped && this.waiting.size) {
        const key = this.waiting.values().next().value!;
        this.waiting.delete(key);
        try {
          await this.sync(key);
          this.failures.delete(key);
        } catch (err) {
          const n = (this.failures.get(key) ?? 0) + 1;
          this.failures.set(key, n);
          console.warn(`svc-apiserver: ${this.name}: ${key}: ${(err as Error).message}`);
          this.addAfter(key, Math.min(this.retryBaseMs * 2 ** (n - 1), this.retryMaxMs));
        }
      }
    } finally {
      this.running = false;
    }
  }
}
