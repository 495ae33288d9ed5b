/**
 * A Store whose values pass through a transform on the way in and out: encryption at rest
 * (encryption.ts) and the storage media type (media-type.ts) are each one layer of it. It wraps any
 * backend, so both are the same on LMDB and etcd; revisions, keys and history are the inner store's.
 * A value the transform cannot read back surfaces as a TransformError naming its key; a value an inner
 * layer already marked unreadable is passed on as it is.
 *
 * A transform may have to wait for something outside the thread (a KMS plugin's Decrypt of a data key
 * seed): it throws PendingTransform, and only then does a method await it and transform again
 * (settle()); the synchronous path of every other transform stays as it was. The live feed keeps its
 * order: from a batch that waits, every later batch is queued behind it.
 */
import { PendingTransform, settle, TransformError } from './value-transform.js';
import type { CompactionClock, DeleteResult, KeyValue, ListOptions, ListResult, Store, StoreEvent, StoreHealthCheck, StoreWatch, WatchOptions, WriteResult, GetOptions } from './interface.js';

/**
 * The last value read back or written per key, with the stored bytes it came from or went to: a
 * value whose stored bytes are the very bytes remembered for its key is not transformed again (this
 * thread's own writes seen again as watch events, which may arrive before the write's answer; the
 * namespace every create reads). Bounded in keys and bytes.
 */
class RecentValues {
  private readonly byKey = new Map<string, { stored: Uint8Array; value: Uint8Array }>();
  private bytes = 0;

  constructor(
    private readonly maxKeys = 1024,
    private readonly maxBytes = 8 << 20,
  ) {}

  get(key: string, stored: Uint8Array): Uint8Array | undefined {
    const known = this.byKey.get(key);
    return known && Buffer.compare(known.stored, stored) === 0 ? known.value : undefined;
  }

  set(key: string, stored: Uint8Array, value: Uint8Array): void {
    const size = stored.length + value.length;
    if (size > this.maxBytes / 64) return;
    const old = this.byKey.get(key);
    if (old) {
      this.byKey.delete(key);
      this.bytes -= old.stored.length + old.value.length;
    }
    this.byKey.set(key, { stored, value });
    this.bytes += size;
    // the least recently set go first (a Map iterates in insertion order)
    for (const [k, v] of this.byKey) {
      if (this.byKey.size <= this.maxKeys && this.bytes <= this.maxBytes) break;
      this.byKey.delete(k);
      this.bytes -= v.stored.length + v.value.length;
    }
  }
}

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
  readonly dependencyChecks?: readonly StoreHealthCheck[];

  /** Released with the store (the watcher of a reloaded configuration). */
  private readonly onClose: (() => void)[] = [];

  /** Set when reads of a value may be remembered (a transform whose reads return exactly what was written). */
  private readonly recent?: RecentValues;

  constructor(
    private readonly inner: Store,
    private tr: StoredValueTransform,
    opts: { rememberValues?: boolean; dependencyChecks?: readonly StoreHealthCheck[] } = {},
  ) {
    if (opts.rememberValues) this.recent = new RecentValues();
    this.singleProcess = inner.singleProcess;
    if (inner.currentRevisionSync) this.currentRevisionSync = () => inner.currentRevisionSync!();
    if (inner.notifyCommitted) this.notifyCommitted = (r) => inner.notifyCommitted!(r);
    if (inner.syncFeeds) this.syncFeeds = () => inner.syncFeeds!();
    if (inner.compactRound) this.compactRound = (c) => inner.compactRound!(c);
    this.healthCheckName = inner.healthCheckName;
    const checks = [...(inner.dependencyChecks ?? []), ...(opts.dependencyChecks ?? [])];
    if (checks.length) this.dependencyChecks = checks;
  }

  /** The value of `key` read back from its stored bytes; `remember`: keep it for the next read of the same bytes. */
  private read(key: string, stored: Uint8Array, remember = true): Uint8Array {
    const known = this.recent?.get(key, stored);
    if (known) return known;
    const value = this.tr.fromStored(key, stored);
    // a copy: the bytes read may be a slice of a large response, which must not stay alive with them
    if (remember && value !== stored) this.recent?.set(key, Buffer.from(stored), value);
    return value;
  }

  /** The stored form of a value written to `key`, remembered so that reading it back costs nothing. */
  private write(key: string, value: Uint8Array): Uint8Array {
    const stored = this.tr.toStored(key, value);
    if (stored !== value) this.recent?.set(key, stored, value);
    return stored;
  }

  /** The value read back; the same KeyValue when the transform leaves it as it is (no copy per item). */
  private out = (kv: KeyValue, remember = true): KeyValue => {
    if (kv.unreadable) return kv;
    const value = this.read(kv.key, kv.value, remember);
    return value === kv.value ? kv : { ...kv, value };
  };

  /** out() for the items of a list, which are not remembered (a list would push out every value worth keeping). */
  private outListed = (kv: KeyValue): KeyValue => this.out(kv, false);

  private outEvent = (e: StoreEvent): StoreEvent => {
    const prevValue = e.prevValue && this.read(e.key, e.prevValue);
    const value = e.value && !e.unreadable ? this.read(e.key, e.value) : e.value;
    return value === e.value && prevValue === e.prevValue ? e : { ...e, value, prevValue };
  };

  /** out(), with a value that cannot be read back marked unreadable (its stored bytes kept) instead of thrown. */
  private outKept = (kv: KeyValue, remember = true): KeyValue => {
    try {
      return this.out(kv, remember);
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
    // the previous value first, so that the current one is what stays remembered for the key
    if (prevValue) {
      try {
        prevValue = this.read(e.key, prevValue);
      } catch (err) {
        if (!(err instanceof TransformError)) throw err;
        prevValue = undefined;
      }
    }
    if (value && !unreadable) {
      try {
        value = this.read(e.key, value);
      } catch (err) {
        if (!(err instanceof TransformError)) throw err;
        unreadable = err.message;
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
    return kv && settle(() => this.out(kv));
  }
  async list(prefix: string, opts?: ListOptions): Promise<ListResult> {
    const r = await this.inner.list(prefix, opts);
    const outItem = opts?.keepUnreadable ? (kv: KeyValue) => this.outKept(kv, false) : this.outListed;
    const items = this.eachSettled(r.items, outItem);
    return { ...r, items: items instanceof Promise ? await items : items };
  }
  create(key: string, value: Uint8Array): Promise<WriteResult> {
    const stored = settle(() => this.write(key, value));
    return stored instanceof Promise ? stored.then((s) => this.inner.create(key, s)) : this.inner.create(key, stored);
  }
  update(key: string, expectedRevision: number, value: Uint8Array): Promise<WriteResult> {
    const stored = settle(() => this.write(key, value));
    return stored instanceof Promise ? stored.then((s) => this.inner.update(key, expectedRevision, s)) : this.inner.update(key, expectedRevision, stored);
  }
  async delete(key: string, expectedRevision?: number): Promise<DeleteResult> {
    const r = await this.inner.delete(key, expectedRevision);
    // the delete is done: a previous value no key reads is answered marked, not as a failure
    const prev = settle(() => this.outKept(r.prev));
    return { ...r, prev: prev instanceof Promise ? await prev : prev };
  }
  async eventsSince(afterRevision: number, prefix?: string, limit?: number): Promise<StoreEvent[]> {
    return this.eachSettled(await this.inner.eventsSince(afterRevision, prefix, limit), this.outEvent);
  }

  /** `items.map(fn)`, synchronously unless an item's transform waits; then each item is settled on its own (in parallel, order kept). */
  private eachSettled<T>(items: T[], fn: (item: T) => T): T[] | Promise<T[]> {
    try {
      return items.map(fn);
    } catch (err) {
      if (!(err instanceof PendingTransform)) throw err;
      return Promise.all(items.map((item) => settle(() => fn(item))));
    }
  }

  watch(afterRevision: number, onEvents: (events: StoreEvent[], revision: number) => void, onError: (err: Error) => void, opts?: WatchOptions): StoreWatch {
    // batches that arrive while an earlier one waits for its transform go behind it, in order
    let tail: Promise<void> | undefined;
    let stopped = false;
    const fail = (err: unknown) => {
      if (!stopped) onError(err as Error);
    };
    const enqueue = (work: () => Promise<void>) => {
      const next = (tail ?? Promise.resolve()).then(work).catch(fail);
      tail = next;
      void next.then(() => {
        if (tail === next) tail = undefined;
      });
    };
    const inner = this.inner.watch(
      afterRevision,
      (events, revision) => {
        const deliver = (decoded: StoreEvent[]) => {
          if (!stopped) onEvents(decoded, revision);
        };
        if (tail) return enqueue(async () => deliver(await this.eachSettled(events, this.outEventKept)));
        let decoded: StoreEvent[] | Promise<StoreEvent[]>;
        try {
          // the feed goes on past values no key reads: they reach the reader marked unreadable
          decoded = this.eachSettled(events, this.outEventKept);
        } catch (err) {
          onError(err as Error);
          return;
        }
        if (decoded instanceof Promise) {
          // its failure is answered by the queue; this only keeps it from counting as unhandled meanwhile
          decoded.catch(() => undefined);
          enqueue(async () => deliver(await decoded));
        } else onEvents(decoded, revision);
      },
      // an error of the feed comes after the batches before it, too
      (err) => (tail ? enqueue(async () => fail(err)) : onError(err)),
      opts,
    );
    return {
      stop() {
        stopped = true;
        inner.stop();
      },
    };
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
