/**
 * A Store whose values pass through a ValueTransformer (encryption at rest) on the way in and out.
 * It wraps any backend, so encryption is the same on LMDB and etcd; revisions, keys and history are
 * the inner store's. A value no provider can read surfaces as a TransformError naming its key.
 */
import { TransformError, type ValueTransformer } from './encryption.js';
import type { CompactionClock, DeleteResult, KeyValue, ListOptions, ListResult, Store, StoreEvent, StoreWatch, WriteResult, GetOptions } from './interface.js';

export class TransformingStore implements Store {
  readonly singleProcess?: boolean;
  readonly currentRevisionSync?: () => number;
  readonly notifyCommitted?: (revision: number) => void;
  readonly syncFeeds?: () => void;
  readonly compactRound?: (clock: CompactionClock) => Promise<CompactionClock & { compacted: number }>;
  readonly healthCheckName?: string;

  /** Released with the store (the watcher of a reloaded configuration). */
  private readonly onClose: (() => void)[] = [];

  constructor(private readonly inner: Store, private tr: ValueTransformer) {
    this.singleProcess = inner.singleProcess;
    if (inner.currentRevisionSync) this.currentRevisionSync = () => inner.currentRevisionSync!();
    if (inner.notifyCommitted) this.notifyCommitted = (r) => inner.notifyCommitted!(r);
    if (inner.syncFeeds) this.syncFeeds = () => inner.syncFeeds!();
    if (inner.compactRound) this.compactRound = (c) => inner.compactRound!(c);
    this.healthCheckName = inner.healthCheckName;
  }

  private out = (kv: KeyValue): KeyValue => ({ ...kv, value: this.tr.decrypt(kv.key, kv.value) });

  private outEvent = (e: StoreEvent): StoreEvent => ({
    ...e,
    value: e.value && this.tr.decrypt(e.key, e.value),
    prevValue: e.prevValue && this.tr.decrypt(e.key, e.prevValue),
  });

  /** out(), with a value no provider reads marked unreadable (its stored bytes kept) instead of thrown. */
  private outKept = (kv: KeyValue): KeyValue => {
    try {
      return this.out(kv);
    } catch (err) {
      if (!(err instanceof TransformError)) throw err;
      return { ...kv, unreadable: err.message };
    }
  };

  /** outEvent() for the live feed: an unreadable new value is marked, an unreadable previous one dropped. */
  private outEventKept = (e: StoreEvent): StoreEvent => {
    const out: StoreEvent = { ...e };
    if (e.value) {
      try {
        out.value = this.tr.decrypt(e.key, e.value);
      } catch (err) {
        if (!(err instanceof TransformError)) throw err;
        out.unreadable = err.message;
      }
    }
    if (e.prevValue) {
      try {
        out.prevValue = this.tr.decrypt(e.key, e.prevValue);
      } catch (err) {
        if (!(err instanceof TransformError)) throw err;
        delete out.prevValue;
      }
    }
    return out;
  };

  currentRevision(): Promise<number> {
    return this.inner.currentRevision();
  }
  compactedRevision(): Promise<number> {
    return this.inner.compactedRevision();
  }
  async get(key: string, opts?: GetOptions): Promise<KeyValue | null> {
    const kv = await this.inner.get(key, opts);
    return kv && this.out(kv);
  }
  async list(prefix: string, opts?: ListOptions): Promise<ListResult> {
    const r = await this.inner.list(prefix, opts);
    return { ...r, items: r.items.map(opts?.keepUnreadable ? this.outKept : this.out) };
  }
  create(key: string, value: Uint8Array): Promise<WriteResult> {
    return this.inner.create(key, this.tr.encrypt(key, value));
  }
  update(key: string, expectedRevision: number, value: Uint8Array): Promise<WriteResult> {
    return this.inner.update(key, expectedRevision, this.tr.encrypt(key, value));
  }
  async delete(key: string, expectedRevision?: number): Promise<DeleteResult> {
    const r = await this.inner.delete(key, expectedRevision);
    // the delete is done: a previous value no key reads is answered marked, not as a failure
    return { ...r, prev: this.outKept(r.prev) };
  }
  async eventsSince(afterRevision: number, prefix?: string, limit?: number): Promise<StoreEvent[]> {
    return (await this.inner.eventsSince(afterRevision, prefix, limit)).map(this.outEvent);
  }
  watch(afterRevision: number, onEvents: (events: StoreEvent[], revision: number) => void, onError: (err: Error) => void): StoreWatch {
    return this.inner.watch(
      afterRevision,
      (events, revision) => {
        let decoded: StoreEvent[];
        try {
          // the feed goes on past values no key reads: they reach the reader marked unreadable
          decoded = events.map(this.outEventKept);
        } catch (err) {
          onError(err as Error);
          return;
        }
        onEvents(decoded, revision);
      },
      onError,
    );
  }
  compact(revision: number): Promise<void> {
    return this.inner.compact(revision);
  }
  /** A reloaded configuration: later reads and writes use it. */
  replaceTransformer(tr: ValueTransformer): void {
    this.tr = tr;
  }

  closeWith(fn: () => void): void {
    this.onClose.push(fn);
  }

  close(): Promise<void> {
    for (const fn of this.onClose.splice(0)) fn();
    return this.inner.close();
  }
}
