/**
 * Compactor: every interval, compacts the store to the revision it saw one interval earlier, as
 * upstream's compactor does with etcd (default interval 5 minutes; the first run only records the
 * revision). Right after a run the oldest revision kept is about one interval old; just before the
 * next it is about two. So a continue token, Exact list or watch resumption older than one interval
 * may still be served, and one older than two intervals is always answered 410 Expired.
 * A store shared by several servers (etcd) runs coordinated rounds instead (Store.compactRound): the
 * servers' compactors together compact about once per interval, as upstream's do.
 */
import type { CompactionClock, Store } from './interface.js';

export class Compactor {
  private timer: NodeJS.Timeout | undefined;
  /** The revision seen at the previous run: the next run compacts to it. 0: nothing seen yet. */
  private previous = 0;
  private running = false;
  /** Coordinated rounds: the shared clock as this compactor last saw it. */
  private clock: CompactionClock = { time: 0, revision: 0 };

  constructor(
    private readonly store: Store,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    if (this.intervalMs <= 0) return;
    this.timer = setInterval(() => void this.runOnce(), this.intervalMs);
    this.timer.unref();
  }

  /**
   * One run: compacts to the revision seen at the previous run and remembers the current one. As
   * upstream, the remembered revision moves on even when compacting fails, so the next run tries
   * the newer one. Returns the revision compacted to (0 when none).
   */
  async runOnce(): Promise<number> {
    if (this.running) return 0;
    this.running = true;
    try {
      if (this.store.compactRound) {
        const r = await this.store.compactRound(this.clock);
        this.clock = { time: r.time, revision: r.revision };
        return r.compacted;
      }
      const target = this.previous;
      this.previous = await this.store.currentRevision();
      if (target <= 0) return 0;
      await this.store.compact(target);
      return target;
    } catch (err) {
      console.warn(`svc-apiserver: compaction failed: ${(err as Error).message}`);
      return 0;
    } finally {
      this.running = false;
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
