/**
 * Compactor: every interval, compacts the store to the revision it saw one interval earlier, so
 * history (resumable watches, Exact lists, continue tokens) is kept between one and two intervals,
 * as upstream's compactor does with etcd (default interval 5 minutes).
 */
import type { Store } from './interface.js';

export class Compactor {
  private timer: NodeJS.Timeout | undefined;
  private previous = 0;
  private running = false;

  constructor(
    private readonly store: Store,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    if (this.intervalMs <= 0) return;
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const current = await this.store.currentRevision();
      if (this.previous > 0) await this.store.compact(this.previous);
      this.previous = current;
    } catch (err) {
      console.warn(`svc-apiserver: compaction failed: ${(err as Error).message}`);
    } finally {
      this.running = false;
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
