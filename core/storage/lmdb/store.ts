/**
 * The embedded store: etcd's MVCC model on LMDB.
 *
 *   meta  'rev' -> current revision, 'compacted' -> compacted revision
 *   kv    key -> latest value, LMDB entry version = modRevision; a deleted key keeps a zero-length
 *         tombstone (version = delete revision) until compaction passes it, so reads at an older
 *         revision still find the key and walk back its history
 *   log   revision -> { t: put|delete, k: key, v: value (a put no longer the key's latest), p: previous
 *         revision of the key }
 *
 * The log is both the watch feed and the history: a key's version at revision R is found by walking
 * `p` back from its latest entry. A put's value is stored once: in kv while it is the key's latest,
 * moved into its log entry by the write that supersedes it (in that write's transaction), so a
 * reader of one snapshot finds every value in one place or the other. (Data written before this
 * layout has the value in every put's entry, which reads take as they find it.) Compaction to R drops entries superseded at or below R and
 * tombstones at or below R, keeping each key's version as of R, as etcd does.
 *
 * Writes run in lmdb-js asynchronous transactions, batched per event turn (group commit), with
 * overlappingSync off so a commit is synced before it resolves and before readers see it. Callbacks
 * check every condition before their first put: a callback that throws does not undo earlier puts.
 * Several threads of one process may open the same directory; LMDB's writer lock orders them. With
 * `sharedByProcesses` several processes of one server (its acceptors) read it too, and with
 * `writesViaPrimary` their writes are made by the server's primary process, the one writer of the
 * machine (write-channel.ts): each commit's revision is allocated inside the write transaction, so
 * the log stays one gap-free sequence, and a process learns of the commits it did not ask for from
 * the kernel (inotify on the data file, which LMDB writes with pwrite, meta page last).
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import { type FSWatcher, watch as watchFile } from 'node:fs';
import { join } from 'node:path';
import {
  type DeleteResult,
  type KeyValue,
  type ListOptions,
  type ListResult,
  type Store,
  StoreError,
  type StoreEvent,
  type StoreWatch,
  type WatchOptions,
  type WriteResult,
  type GetOptions,
} from '../interface.js';
import { acceptorWriteChannel, outcomeOf, type WriteChannel, type WriteOp, type WriteOutcome } from './write-channel.js';

interface LogEntry {
  /** 0 = put, 1 = delete */
  t: 0 | 1;
  k: string;
  v?: Uint8Array;
  p: number;
}

type TxnOutcome<T> = { ok: T } | { err: StoreError };

const EMPTY = new Uint8Array(0);

/**
 * Log entries a compaction transaction passes over. 5,000 held the main thread 60-100 ms a batch (a
 * compaction after five minutes of 500 node heartbeats a second is 30 such batches, each a stall of
 * every request); 200 hold it a few ms, for 25 times the commits of a pass that runs in the
 * background every five minutes.
 */
const COMPACTION_BATCH = 200;

const compactedError = (revision: number, compacted: number): StoreError =>
  new StoreError('Compacted', `required revision ${revision} has been compacted`, compacted);
const PREFIX_END = '\uffff';

/** LMDB's largest key (lmdb-js's default maxKeySize), in UTF-8 bytes. */
const MAX_KEY_BYTES = 1978;

/**
 * Whether a key of this many bytes more than `s` fits LMDB. A key that does not was never written
 * (no write can create it), so it is answered as absent without asking LMDB, which refuses such
 * lookups: a name of a few thousand characters in a URL is a 404, not a failed read.
 */
const fits = (s: string, extra = 0): boolean => s.length * 3 + extra <= MAX_KEY_BYTES || Buffer.byteLength(s) + extra <= MAX_KEY_BYTES;

export interface LmdbStoreOptions {
  path: string;
  /** Poll interval of the live feed, for commits made by other threads that did not notify. */
  pollIntervalMs?: number;
  /** Other processes write the directory too (a server's acceptors): reads ask the store's revision. */
  sharedByProcesses?: boolean;
  /** Writes are made by the server's primary process, not here (an acceptor: write-channel.ts). */
  writesViaPrimary?: boolean;
}

export class LmdbStore implements Store {
  /** One process owns the directory (threads of it share the environment), unless its acceptors share it. */
  readonly singleProcess: boolean;
  private readonly path: string;
  /** Commits of other processes, as the kernel reports writes to the data file (shared directories only). */
  private fileWatch: FSWatcher | undefined;
  private readonly root: RootDatabase;
  private readonly meta: Database<number, string>;
  private readonly kv: Database<Uint8Array, string>;
  private readonly log: Database<LogEntry, number>;
  private readonly feeds = new Set<LogFeed>();
  private pollTimer: NodeJS.Timeout | undefined;
  private readonly pollIntervalMs: number;
  /** Where writes go when this process is not the writer. */
  private readonly writer: { channel: WriteChannel; close: () => void } | undefined;

  constructor(opts: LmdbStoreOptions) {
    // one whole-file map (lmdb-js's remapChunks crashed a pool-mode server with SIGSEGV under load)
    this.root = open({ path: opts.path, overlappingSync: false, maxDbs: 8 });
    this.meta = this.root.openDB<number, string>('meta', { encoding: 'msgpack' });
    this.kv = this.root.openDB<Uint8Array, string>('kv', { encoding: 'binary', useVersions: true });
    this.log = this.root.openDB<LogEntry, number>('log', { encoding: 'msgpack' });
    this.pollIntervalMs = opts.pollIntervalMs ?? 20;
    this.singleProcess = !opts.sharedByProcesses;
    this.path = opts.path;
    if (opts.writesViaPrimary) this.writer = acceptorWriteChannel(opts.path);
  }

  // ---- reads ---------------------------------------------------------------------------------

  private rev(): number {
    return this.meta.get('rev') ?? 0;
  }
  private compacted(): number {
    return this.meta.get('compacted') ?? 0;
  }

  async currentRevision(): Promise<number> {
    return this.currentRevisionSync();
  }

  /** Synchronous variant for callers on the same thread that need no await (the watch cache). */
  currentRevisionSync(): number {
    this.root.resetReadTxn();
    return this.rev();
  }

  async compactedRevision(): Promise<number> {
    return this.compacted();
  }

  private checkReadRevision(revision: number | undefined): void {
    if (revision === undefined) return;
    const compacted = this.compacted();
    if (revision < compacted) throw compactedError(revision, compacted);
    const current = this.rev();
    if (revision > current) throw new StoreError('FutureRevision', `required revision ${revision} is a future revision`, current);
  }

  /** The value of `key` as of `revision`, starting from its latest entry (modRevision `version`). */
  private valueAt(latest: { value: Uint8Array; version: number }, revision: number): { value: Uint8Array; rev: number } | null {
    if (latest.version <= revision) return latest.value.length === 0 ? null : { value: latest.value, rev: latest.version };
    let entry = this.log.get(latest.version);
    while (entry) {
      const prev = entry.p;
      if (prev === 0) return null;
      if (prev <= revision) {
        const at = this.log.get(prev);
        if (!at || at.t === 1 || !at.v) return null;
        return { value: at.v, rev: prev };
      }
      entry = this.log.get(prev);
    }
    return null;
  }

  async get(key: string, opts: GetOptions = {}): Promise<KeyValue | null> {
    this.root.resetReadTxn();
    if (opts.revision !== undefined) this.checkReadRevision(opts.revision);
    if (!fits(key)) return null;
    const e = this.kv.getEntry(key);
    if (opts.revision === undefined) {
      if (!e || e.value.length === 0) return null;
      return { key, value: e.value, modRevision: e.version! };
    }
    if (!e) return null;
    const at = this.valueAt({ value: e.value, version: e.version! }, opts.revision);
    return at ? { key, value: at.value, modRevision: at.rev } : null;
  }

  async list(prefix: string, opts: ListOptions = {}): Promise<ListResult> {
    this.root.resetReadTxn();
    const txn = this.root.useReadTransaction();
    try {
      const current = this.rev();
      const revision = opts.revision ?? current;
      if (opts.revision !== undefined) this.checkReadRevision(opts.revision);
      const limit = opts.limit && opts.limit > 0 ? opts.limit : Infinity;
      const items: KeyValue[] = [];
      let more = false;
      let remaining = 0;
      const start = opts.startKey && opts.startKey > prefix ? opts.startKey : prefix;
      // a range ends at prefix + PREFIX_END (3 bytes), which must fit too
      const range = fits(prefix, 3) ? this.kv.getRange({ start, end: prefix + PREFIX_END, versions: true, transaction: txn }) : [];
      for (const e of range) {
        const at = revision === current ? (e.value.length === 0 ? null : { value: e.value, rev: e.version! }) : this.valueAt({ value: e.value, version: e.version! }, revision);
        if (!at) continue;
        if (items.length < limit) {
          items.push({ key: e.key, value: at.value, modRevision: at.rev });
          continue;
        }
        more = true;
        if (!opts.countRemaining) break;
        remaining++;
      }
      const res: ListResult = { items, revision, more };
      if (opts.countRemaining) res.remaining = remaining;
      return res;
    } finally {
      txn.done();
    }
  }

  // ---- writes --------------------------------------------------------------------------------

  /** A write: in this process, or sent to the server's one writer (write-channel.ts). */
  private async commit<T>(op: WriteOp): Promise<T> {
    if (!this.writer) return (await this.runLocal(op)) as T;
    const out = (await this.writer.channel.write(op)) as T;
    this.schedulePull();
    return out;
  }

  /** Runs a write here (the primary runs its acceptors' writes with it, through applyWrite). */
  private runLocal(op: WriteOp): Promise<unknown> {
    switch (op.op) {
      case 'create':
        return this.write(() => this.createTxn(op.key, op.value));
      case 'update':
        return this.write(() => this.updateTxn(op.key, op.expected, op.value));
      case 'delete':
        return this.write(() => this.deleteTxn(op.key, op.expected));
      case 'compact':
        return this.compactHere(op.revision);
    }
  }

  /** The primary's side of the write channel: a write of an acceptor, run here, and its outcome. */
  applyWrite(op: WriteOp): Promise<WriteOutcome> {
    return outcomeOf(() => this.runLocal(op));
  }

  private async write<T>(fn: () => TxnOutcome<T>): Promise<T> {
    const out = await this.root.transaction(fn);
    if ('err' in out) throw out.err;
    this.schedulePull();
    return out.ok;
  }

  /** Allocates the next revision inside a write transaction. */
  private nextRevision(): number {
    const rev = (this.meta.get('rev') ?? 0) + 1;
    this.meta.put('rev', rev);
    return rev;
  }

  create(key: string, value: Uint8Array): Promise<WriteResult> {
    return this.commit({ op: 'create', key, value });
  }

  update(key: string, expectedRevision: number, value: Uint8Array): Promise<WriteResult> {
    return this.commit({ op: 'update', key, expected: expectedRevision, value });
  }

  delete(key: string, expectedRevision?: number): Promise<DeleteResult> {
    return this.commit(expectedRevision === undefined ? { op: 'delete', key } : { op: 'delete', key, expected: expectedRevision });
  }

  private createTxn(key: string, value: Uint8Array): TxnOutcome<WriteResult> {
    const e = this.kv.getEntry(key);
    if (e && e.value.length > 0) return { err: new StoreError('KeyExists', `key ${key} exists`, e.version) };
    const revision = this.nextRevision();
    this.kv.put(key, value, revision);
    this.log.put(revision, { t: 0, k: key, p: e ? e.version! : 0 });
    return { ok: { revision } };
  }

  private updateTxn(key: string, expectedRevision: number, value: Uint8Array): TxnOutcome<WriteResult> {
    const e = this.kv.getEntry(key);
    if (!e || e.value.length === 0) return { err: new StoreError('NotFound', `key ${key} not found`) };
    if (e.version !== expectedRevision) return { err: new StoreError('Conflict', `key ${key} has revision ${e.version}`, e.version) };
    const revision = this.nextRevision();
    this.intoHistory(e.version!, e.value);
    this.kv.put(key, value, revision);
    this.log.put(revision, { t: 0, k: key, p: e.version });
    return { ok: { revision } };
  }

  private deleteTxn(key: string, expectedRevision: number | undefined): TxnOutcome<DeleteResult> {
    const e = this.kv.getEntry(key);
    if (!e || e.value.length === 0) return { err: new StoreError('NotFound', `key ${key} not found`) };
    if (expectedRevision !== undefined && e.version !== expectedRevision) return { err: new StoreError('Conflict', `key ${key} has revision ${e.version}`, e.version) };
    const revision = this.nextRevision();
    this.intoHistory(e.version!, e.value);
    this.kv.put(key, EMPTY, revision);
    this.log.put(revision, { t: 1, k: key, p: e.version! });
    return { ok: { revision, prev: { key, value: e.value, modRevision: e.version! } } };
  }

  /** A key's latest value, superseded by the write in progress, goes into its log entry (the history). */
  private intoHistory(revision: number, value: Uint8Array): void {
    const entry = this.log.get(revision);
    if (entry && entry.t === 0 && !entry.v) this.log.put(revision, { t: 0, k: entry.k, v: value, p: entry.p });
  }

  // ---- history and feed ----------------------------------------------------------------------

  /** A put's value: in its log entry once superseded, else the key's latest in kv (same snapshot). */
  private putValue(revision: number, entry: LogEntry): Uint8Array | undefined {
    if (entry.v) return entry.v;
    const cur = this.kv.getEntry(entry.k);
    return cur && cur.version === revision ? cur.value : undefined;
  }

  /** An event of the log; with `prevValue` false the previous value is not looked up (prevRevision stays the log's). */
  private toEvent(revision: number, entry: LogEntry, prevValue = true): StoreEvent {
    const ev: StoreEvent = { type: entry.t === 0 ? 'put' : 'delete', key: entry.k, revision, prevRevision: entry.p };
    if (entry.t === 0) ev.value = this.putValue(revision, entry);
    if (prevValue && entry.p > 0) {
      const prev = this.log.get(entry.p);
      if (prev && prev.t === 0 && prev.v) ev.prevValue = prev.v;
      else ev.prevRevision = 0;
    }
    return ev;
  }

  /** Reads events in (after, upTo] synchronously, in one snapshot. */
  private readEvents(after: number, upTo: number, prefix?: string, limit = Infinity, prevValues = true): StoreEvent[] {
    const out: StoreEvent[] = [];
    for (const { key, value } of this.log.getRange({ start: after + 1, end: upTo + 1 })) {
      if (prefix && !value.k.startsWith(prefix)) continue;
      out.push(this.toEvent(key, value, prevValues));
      if (out.length >= limit) break;
    }
    return out;
  }

  async eventsSince(afterRevision: number, prefix?: string, limit?: number): Promise<StoreEvent[]> {
    this.root.resetReadTxn();
    return this.eventsSinceSync(afterRevision, this.rev(), prefix, limit);
  }

  /** Events in (after, upTo], or StoreError Compacted when `after` is below the compacted revision. */
  eventsSinceSync(after: number, upTo: number, prefix?: string, limit?: number, prevValues = true): StoreEvent[] {
    const compacted = this.compacted();
    if (after < compacted) throw compactedError(after, compacted);
    return this.readEvents(after, upTo, prefix, limit, prevValues);
  }

  watch(afterRevision: number, onEvents: (events: StoreEvent[], revision: number) => void, onError: (err: Error) => void, opts?: WatchOptions): StoreWatch {
    const feed = new LogFeed(this, afterRevision, onEvents, onError, opts?.prevValues ?? true);
    this.feeds.add(feed);
    if (!this.pollTimer) {
      this.pollTimer = setInterval(() => this.pullFeeds(), this.pollIntervalMs);
      this.pollTimer.unref();
    }
    if (!this.singleProcess && !this.fileWatch) {
      // a commit writes its pages and then the meta page: each write is an event, coalesced into one pull a turn
      this.fileWatch = watchFile(join(this.path, 'data.mdb'), { persistent: false }, () => this.schedulePull());
      this.fileWatch.on('error', () => undefined);
    }
    queueMicrotask(() => feed.pull());
    return {
      stop: () => {
        this.feeds.delete(feed);
        if (this.feeds.size === 0 && this.pollTimer) {
          clearInterval(this.pollTimer);
          this.pollTimer = undefined;
          this.fileWatch?.close();
          this.fileWatch = undefined;
        }
      },
    };
  }

  notifyCommitted(): void {
    this.schedulePull();
  }

  syncFeeds(): void {
    this.pullFeeds();
  }

  private pullScheduled = false;

  /** One feed pull per event-loop turn however many commits resolve in it (a pull renews the read txn). */
  private schedulePull(): void {
    if (this.pullScheduled || this.feeds.size === 0) return;
    this.pullScheduled = true;
    setImmediate(() => {
      this.pullScheduled = false;
      this.pullFeeds();
    });
  }

  /** Brings every live feed up to the current revision, synchronously. */
  pullFeeds(): void {
    for (const f of this.feeds) f.pull();
  }

  compact(revision: number): Promise<void> {
    return this.commit({ op: 'compact', revision });
  }

  /**
   * Compacts in bounded transactions so the writer lock is never held for long, and the event loop
   * neither: lmdb-js runs a transaction's callback on this thread, and requests are served between
   * two of them.
   */
  private async compactHere(revision: number): Promise<void> {
    const batch = COMPACTION_BATCH;
    for (;;) {
      const done = await this.root.transaction(() => {
        const from = this.compacted();
        const target = Math.min(revision, this.rev());
        if (target <= from) return true;
        const upTo = Math.min(target, from + batch);
        for (const { key: rev, value: entry } of this.log.getRange({ start: from + 1, end: upTo + 1 })) {
          if (entry.p > 0) this.log.remove(entry.p);
          if (entry.t === 1) {
            this.log.remove(rev);
            const cur = this.kv.getEntry(entry.k);
            if (cur && cur.version === rev && cur.value.length === 0) this.kv.remove(entry.k);
          }
        }
        this.meta.put('compacted', upTo);
        return upTo >= target;
      });
      if (done) return;
    }
  }

  async close(): Promise<void> {
    this.writer?.close();
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.fileWatch?.close();
    this.feeds.clear();
    await this.root.close();
  }
}

/** One subscriber's position in the log; pull() delivers everything committed since. */
class LogFeed {
  constructor(
    private readonly store: LmdbStore,
    private position: number,
    private readonly onEvents: (events: StoreEvent[], revision: number) => void,
    private readonly onError: (err: Error) => void,
    private readonly prevValues: boolean,
  ) {}

  pull(): void {
    try {
      const current = this.store.currentRevisionSync();
      if (current <= this.position) return;
      const events = this.store.eventsSinceSync(this.position, current, undefined, undefined, this.prevValues);
      this.position = current;
      this.onEvents(events, current);
    } catch (err) {
      this.onError(err as Error);
    }
  }
}
