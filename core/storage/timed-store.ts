/**
 * A Store that times every request to the store it wraps (upstream's etcd_request_duration_seconds,
 * whatever the backend). Timings go to a sink: on the main thread straight into the histogram; in a
 * pool worker into a buffer that rides back with each task's result, so no thread shares a metric.
 */
import type { CompactionClock, DeleteResult, KeyValue, ListOptions, ListResult, Store, StoreEvent, StoreHealthCheck, StoreWatch, WatchOptions, WriteResult, GetOptions } from './interface.js';

export type StoreOperation = 'get' | 'list' | 'create' | 'update' | 'delete' | 'events' | 'compact';

export interface StoreTimingSink {
  observe(operation: StoreOperation, type: string, seconds: number): void;
}

/** A timing as it crosses threads: [operation, type, seconds]. */
export type StoreTiming = [StoreOperation, string, number];

/** Collects timings in a worker until the next task result takes them. */
export class StoreTimingBuffer implements StoreTimingSink {
  private pending: StoreTiming[] = [];
  /** Bounded: a worker whose results never carry timings (none run) cannot grow it. */
  private static readonly MAX = 10_000;

  observe(operation: StoreOperation, type: string, seconds: number): void {
    if (this.pending.length < StoreTimingBuffer.MAX) this.pending.push([operation, type, seconds]);
  }

  /** The timings since the last call, or undefined when there are none. */
  drain(): StoreTiming[] | undefined {
    if (!this.pending.length) return undefined;
    const out = this.pending;
    this.pending = [];
    return out;
  }
}

/** The object type of a key (`/registry/<group or core>/<plural>/...`): `<plural>` for core, `<plural>.<group>` otherwise. */
export function typeOfKey(key: string): string {
  const g0 = key.indexOf('/', 1);
  if (g0 < 0) return '';
  const g1 = key.indexOf('/', g0 + 1);
  if (g1 < 0) return '';
  const group = key.slice(g0 + 1, g1);
  const p1 = key.indexOf('/', g1 + 1);
  const plural = key.slice(g1 + 1, p1 < 0 ? undefined : p1);
  return group === 'core' ? plural : `${plural}.${group}`;
}

export class TimedStore implements Store {
  readonly singleProcess?: boolean;
  readonly currentRevisionSync?: () => number;
  readonly notifyCommitted?: (revision: number) => void;
  readonly syncFeeds?: () => void;
  readonly compactRound?: (clock: CompactionClock) => Promise<CompactionClock & { compacted: number }>;
  readonly healthCheckName?: string;
  readonly dependencyChecks?: readonly StoreHealthCheck[];

  constructor(private readonly inner: Store, private readonly sink: StoreTimingSink) {
    this.singleProcess = inner.singleProcess;
    this.dependencyChecks = inner.dependencyChecks;
    if (inner.compactRound) this.compactRound = (c) => inner.compactRound!(c);
    this.healthCheckName = inner.healthCheckName;
    if (inner.currentRevisionSync) this.currentRevisionSync = () => inner.currentRevisionSync!();
    if (inner.notifyCommitted) this.notifyCommitted = (r) => inner.notifyCommitted!(r);
    if (inner.syncFeeds) this.syncFeeds = () => inner.syncFeeds!();
  }

  private async timed<T>(op: StoreOperation, key: string, run: Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await run;
    } finally {
      this.sink.observe(op, typeOfKey(key), (performance.now() - started) / 1000);
    }
  }

  currentRevision(): Promise<number> {
    return this.inner.currentRevision();
  }
  compactedRevision(): Promise<number> {
    return this.inner.compactedRevision();
  }
  get(key: string, opts?: GetOptions): Promise<KeyValue | null> {
    return this.timed('get', key, this.inner.get(key, opts));
  }
  list(prefix: string, opts?: ListOptions): Promise<ListResult> {
    return this.timed('list', prefix, this.inner.list(prefix, opts));
  }
  create(key: string, value: Uint8Array): Promise<WriteResult> {
    return this.timed('create', key, this.inner.create(key, value));
  }
  update(key: string, expectedRevision: number, value: Uint8Array): Promise<WriteResult> {
    return this.timed('update', key, this.inner.update(key, expectedRevision, value));
  }
  delete(key: string, expectedRevision?: number): Promise<DeleteResult> {
    return this.timed('delete', key, this.inner.delete(key, expectedRevision));
  }
  eventsSince(afterRevision: number, prefix?: string, limit?: number): Promise<StoreEvent[]> {
    return this.timed('events', prefix ?? '', this.inner.eventsSince(afterRevision, prefix, limit));
  }
  watch(afterRevision: number, onEvents: (events: StoreEvent[], revision: number) => void, onError: (err: Error) => void, opts?: WatchOptions): StoreWatch {
    return this.inner.watch(afterRevision, onEvents, onError, opts);
  }
  compact(revision: number): Promise<void> {
    return this.timed('compact', '', this.inner.compact(revision));
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
