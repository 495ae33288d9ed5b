/**
 * A Store whose values pass through a transform on the way in and out: encryption at rest
 * (encryption.ts) and the storage media type (media-type.ts) are each one layer of it. It wraps any
 * backend, so both are the same on LMDB and etcd; revisions, keys and history are the inner store's.
 * A value the transform cannot read back surfaces as a TransformError naming its key; a value an inner
 * layer already marked unreadable is passed on as it is.
 */
import { TransformError } from './encryption.js';
import type { CompactionClock, DeleteResult, KeyValue, ListOptions, ListResult, Store, StoreEvent, StoreWatch, WriteResult, GetOptions } from './interface.js';

/** One layer of value transformation: to the stored form on writes, back on reads (TransformError when it cannot). */
export interface StoredValueTransform {
  toStored(key: string, value: Uint8Array): Uint8Array;
  fromStored(key: string, stored: Uint8Array): Uint8Array;
}

export class TransformingStore implements Store {
  readonly singleProcess?: boolean;
  readonly currentRevisionSync?: () => number;
  readonly notifyCommitted?: (revision: number) => void;
  readonly syncFeeds?: () => void;
  readonly compactRound?: (clock: CompactionClock) => Promise<CompactionClock & { compacted: number }>;
  readonly healthCheckName?: string;

  /** Released with the store (the watcher of a reloaded configuration). */
  private readonly onClose: (() => void)[] = [];

  constructor(private readonly inner: Store, private tr: StoredValueTransform) {
    this.singleProcess = inner.singleProcess;
    if (inner.currentRevisionSync) this.currentRevisionSync = () => inner.currentRevisionSync!();
    if (inner.notifyCommitted) this.notifyCommitted = (r) => inner.notifyCommitted!(r);
    if (inner.syncFeeds) this.syncFeeds = () => inner.syncFeeds!();
    if (inner.compactRound) this.compactRound = (c) => inner.compactRound!(c);
    this.healthCheckName = inner.healthCheckName;
  }

  /** The value read back; the same KeyValue when the transform leaves it as it is (no copy per item). */
  private out = (kv: KeyValue): KeyValue => {
    if (kv.unreadable) return kv;
    const value = this.tr.fromStored(kv.key, kv.value);
    return value === kv.value ? kv : { ...kv, value };
  };

  private outEvent = (e: StoreEvent): StoreEvent => {
    const value = e.value && !e.unreadable ? this.tr.fromStored(e.key, e.value) : e.value;
    const prevValue = e.prevValue && this.tr.fromStored(e.key, e.prevValue);
    return value === e.value && prevValue === e.prevValue ? e : { ...e, value, prevValue };
  };

  /** out(), with a value that cannot be read back marked unreadable (its stored bytes kept) instead of thrown. */
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
    let value = e.value;
    let prevValue = e.prevValue;
    let unreadable = e.unreadable;
    if (value && !unreadable) {
      try {
        value = this.tr.fromStored(e.key, value);
      } catch (err) {
        if (!(err instanceof TransformError)) throw err;
        unreadable = err.message;
      }
    }
    if (prevValue) {
      try {
        prevValue = this.tr.fromStored(e.key, prevValue);
      } catch (err) {
        if (!(err instanceof TransformError)) throw err;
        prevValue = undefined;
      }
    }
    if (value === e.value && prevValue === e.prevValue && unreadable === e.unreadable) return e;
    const out: StoreEvent = { ...e, value, prevValue };
    if (prevValue === undefined) delete out.prevValue;
    if (unreadable !== undefined) out.unreadable = unreadable;
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
    return this.inner.create(key, this.tr.toStored(key, value));
  }
  update(key: string, expectedRevision: number, value: Uint8Array): Promise<WriteResult> {
    return this.inner.update(key, expectedRevision, this.tr.toStored(key, value));
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
  replaceTransformer(tr: StoredValueTransform): void {
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
