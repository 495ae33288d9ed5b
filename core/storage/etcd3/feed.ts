import type { IDuplexStream, IWatchRequest, IWatchResponse } from 'etcd3';
import type { StoreEvent } from '../interface.js';
import type { Etcd3Store } from './store.js';

/**
 * One subscriber's watch on etcd. It delivers each watch response's events under the prefix with the
 * revision of the response's last event (every revision's events come in one response), and progress
 * notifications as empty batches. A broken stream (etcd restarted, unreachable) is reopened from the
 * last delivered revision; a compacted start revision is reported as an error (the reader relists).
 */
export class EtcdFeed {
  private stream: IDuplexStream<IWatchRequest, IWatchResponse> | undefined;
  private stopped = false;
  private retryMs = 100;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Etcd3Store,
    private position: number,
    private readonly onEvents: (events: StoreEvent[], revision: number) => void,
    private readonly onError: (err: Error) => void,
  ) {}

  open(): void {
    if (this.stopped) return;
    this.store
      .openWatch(this.position + 1)
      .then((stream) => {
        if (this.stopped) return stream.cancel();
        this.stream = stream;
        stream.on('data', (res: IWatchResponse) => this.onResponse(stream, res));
        stream.on('error', () => this.broken(stream));
        stream.on('end', () => this.broken(stream));
      })
      .catch(() => this.retry());
  }

  private onResponse(stream: IDuplexStream<IWatchRequest, IWatchResponse>, res: IWatchResponse): void {
    if (this.stopped || stream !== this.stream) return;
    if (res.canceled) {
      this.stop();
      this.onError(this.store.watchCanceled(res, this.position));
      return;
    }
    this.retryMs = 100;
    if (res.created) return;
    const last = res.events.at(-1);
    // a response without events is a progress notification: nothing up to its revision is missing
    const revision = last ? Number(last.kv.mod_revision) : Number(res.header.revision);
    if (revision <= this.position) return;
    const events = this.store.toEvents(res.events).filter((e) => e.revision > this.position);
    this.position = revision;
    try {
      this.onEvents(events, revision);
    } catch (err) {
      // a reader that failed on a batch cannot trust its state any more: it restarts from a fresh list
      this.stop();
      this.onError(err as Error);
    }
  }

  private broken(stream: IDuplexStream<IWatchRequest, IWatchResponse>): void {
    if (stream !== this.stream) return;
    this.stream = undefined;
    stream.cancel();
    this.retry();
  }

  private retry(): void {
    if (this.stopped) return;
    this.retryTimer = setTimeout(() => this.open(), this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(this.retryMs * 2, 2000);
  }

  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const s = this.stream;
    this.stream = undefined;
    s?.cancel();
  }
}
