/**
 * The storage contract, with etcd's semantics. Everything above core/storage talks to this interface
 * only; the embedded LMDB store (core/storage/lmdb) and, later, etcd implement it.
 *
 * - One global revision: every committed write gets the next integer; an object's modRevision is the
 *   revision of its last write and is what the API calls its resourceVersion.
 * - Values are opaque bytes (the API layer stores canonical JSON without resourceVersion, which it
 *   injects from modRevision on the way out, as upstream does with etcd).
 * - Writes are compare-and-swap on modRevision and are acknowledged only once durable.
 * - History: reads at an older revision and an ordered event feed from any revision are served until
 *   the revision is compacted; below that, StoreError 'Compacted' (the API answers 410 Expired).
 */

export interface KeyValue {
  key: string;
  value: Uint8Array;
  /** Revision of the write that produced this value. */
  modRevision: number;
  /** Set when the value could not be read back (e.g. no key decrypts it): why; `value` is then the stored bytes. */
  unreadable?: string;
}

export interface StoreEvent {
  type: 'put' | 'delete';
  key: string;
  revision: number;
  /** New value (put only). */
  value?: Uint8Array;
  /** Value before this event; absent for a put that created the key. */
  prevValue?: Uint8Array;
  /** Revision of prevValue (0 when created). */
  prevRevision: number;
  /** Set when the new value could not be read back: why (`value` is then the stored bytes). */
  unreadable?: string;
}

/** How a live feed is read. */
export interface WatchOptions {
  /**
   * Whether events carry the previous value (default true). A reader that keeps the current state
   * itself (the watch cache) says false, and a backend that must look the previous value up (LMDB:
   * one more log entry read and decoded per event) spares that work.
   */
  prevValues?: boolean;
}

export type StoreErrorCode = 'KeyExists' | 'NotFound' | 'Conflict' | 'Compacted' | 'FutureRevision' | 'Unavailable';

export class StoreError extends Error {
  constructor(
    readonly code: StoreErrorCode,
    message: string,
    /** For Conflict: the current modRevision; for Compacted: the compacted revision; for FutureRevision: the current one. */
    readonly revision = 0,
  ) {
    super(message);
  }
}

export interface GetOptions {
  /** Read at this revision (must not be compacted); absent: the latest. */
  revision?: number;
  /**
   * The latest value as the nearest store member has it, which may trail the latest acknowledged write
   * by moments, as an informer's cache does (etcd's serializable read: no consensus round trip). For
   * checks upstream answers from a cache, such as the namespace of new content; ignored by stores
   * whose every read is local.
   */
  serializable?: boolean;
}

export interface ListOptions {
  /** Read at this revision (must not be compacted); absent: the latest. */
  revision?: number;
  /** First key to return (inclusive); absent: the start of the prefix. */
  startKey?: string;
  /** Maximum number of items; absent or 0: all. */
  limit?: number;
  /** Count the items after the page (for remainingItemCount). */
  countRemaining?: boolean;
  /** Return values that cannot be read back marked `unreadable` instead of failing the list (the watch cache keeps their place). */
  keepUnreadable?: boolean;
}

export interface ListResult {
  items: KeyValue[];
  /** The revision the list was read at. */
  revision: number;
  /** Whether more keys exist after the last returned one. */
  more: boolean;
  /** Items after this page (only with countRemaining). */
  remaining?: number;
}

export interface WriteResult {
  revision: number;
}

export interface DeleteResult {
  revision: number;
  prev: KeyValue;
}

/** A subscription to the ordered event feed. */
export interface StoreWatch {
  stop(): void;
}

/** A compaction round's view of the shared compaction record (etcd: compact_rev_key, as upstream). */
export interface CompactionClock {
  /** The record's version when this process last saw it (a logical clock shared by every server). */
  time: number;
  /** The revision seen then: the next winning round compacts to it. */
  revision: number;
}

/** A named health check (/livez, /readyz, /healthz): undefined when healthy, else why not. */
export interface StoreHealthCheck {
  name: string;
  check(): Promise<string | undefined>;
}

export interface Store {
  /** The latest committed revision (a consistent read: reflects every acknowledged write). */
  currentRevision(): Promise<number>;
  /** The same, without waiting, for backends that can read it locally (embedded stores). */
  currentRevisionSync?(): number;
  /**
   * True when every write to this store is made by this process (the embedded store): the highest
   * revision this process has acknowledged is then the latest a client can know of, and a consistent
   * read need not ask the store.
   */
  readonly singleProcess?: boolean;
  /** The highest compacted revision; history strictly below it is gone. */
  compactedRevision(): Promise<number>;

  /** One key, at the latest or an older revision; null when absent at that revision. */
  get(key: string, opts?: GetOptions): Promise<KeyValue | null>;
  /** Keys under a prefix in key order, one consistent snapshot. */
  list(prefix: string, opts?: ListOptions): Promise<ListResult>;

  /** Creates key; StoreError KeyExists when it exists. */
  create(key: string, value: Uint8Array): Promise<WriteResult>;
  /** Replaces key only if its modRevision is still expectedRevision; NotFound / Conflict otherwise. */
  update(key: string, expectedRevision: number, value: Uint8Array): Promise<WriteResult>;
  /** Deletes key (only if its modRevision matches, when given); NotFound / Conflict otherwise. */
  delete(key: string, expectedRevision?: number): Promise<DeleteResult>;

  /**
   * Ordered events after `afterRevision` (exclusive) under `prefix`, at most `limit`;
   * StoreError Compacted when afterRevision < compactedRevision.
   */
  eventsSince(afterRevision: number, prefix?: string, limit?: number): Promise<StoreEvent[]>;
  /**
   * Live feed of every event after `afterRevision`, delivered in revision order in batches, with the
   * revision the batch brings the reader to (>= the last event's, so quiet periods still advance it).
   */
  watch(afterRevision: number, onEvents: (events: StoreEvent[], revision: number) => void, onError: (err: Error) => void, opts?: WatchOptions): StoreWatch;
  /** Hint that a write at `revision` was committed (maybe by another thread): the feed pulls soon, once per turn. */
  notifyCommitted?(revision: number): void;
  /** Brings live feeds up to the current revision now (before a read that must see every acknowledged write). */
  syncFeeds?(): void;

  /**
   * One compaction round coordinated between the processes sharing the store (stores that are shared):
   * only the round that wins the compare-and-swap of the clock compacts, to the revision it saw a
   * round earlier. Returns the clock as seen now and the revision compacted to (0: none).
   */
  compactRound?(clock: CompactionClock): Promise<CompactionClock & { compacted: number }>;
  /** Name of the store's health check (upstream: etcd); absent: store. */
  readonly healthCheckName?: string;
  /** Health checks of what the store's values depend on besides the store (the KMS plugins of encryption at rest). */
  readonly dependencyChecks?: readonly StoreHealthCheck[];

  /** Drops history below `revision` (etcd's compaction). */
  compact(revision: number): Promise<void>;
  close(): Promise<void>;
}
