/**
 * The etcd v3 store: the storage contract on a real etcd, through the etcd3 client (gRPC, @grpc/grpc-js).
 *
 * - Revisions are etcd's: an object's modRevision is its resourceVersion, reads at a revision are
 *   etcd's MVCC reads, and compaction is etcd's.
 * - Writes are one transaction each, compare-and-swap as upstream's etcd3 store does them: create
 *   compares create_revision == 0, update and conditional delete compare mod_revision.
 * - The event feed is etcd's watch API. A feed watches the whole key space and drops keys outside
 *   the prefix, so it sees every revision (etcd gives each revision at least one event): the revision
 *   it reports is exact without asking for progress (etcd 3.4's progress requests may overtake
 *   events), and a consistent read that waits for etcd's current revision is never left waiting on a
 *   write made outside the prefix (compact_rev_key). Periodic progress notifications are asked for too
 *   and also advance the feed.
 * - Several processes share one etcd, so `singleProcess` is false: a consistent read asks etcd for
 *   its current revision.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Etcd3, IDuplexStream, IEvent, IKeyValue, IWatchRequest, IWatchResponse } from 'etcd3';
import type * as Etcd3Module from 'etcd3';
import {
  type CompactionClock,
  type DeleteResult,
  type KeyValue,
  type ListOptions,
  type ListResult,
  type Store,
  StoreError,
  type StoreEvent,
  type StoreWatch,
  type WriteResult,
  type GetOptions,
} from '../interface.js';
import { EtcdFeed } from './feed.js';
import { KeyLayout } from './keys.js';
import { SharedReads } from './shared-reads.js';

export interface Etcd3StoreOptions {
  /** Endpoints, `https://host:port` or `http://host:port` (--etcd-servers). */
  endpoints: string[];
  /** Prefix of every key (--etcd-prefix, default /registry). */
  prefix: string;
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  /** Deadline of one etcd call (a stuck etcd fails calls instead of piling them up). */
  callTimeoutMs?: number;
}

/** Upstream's key for coordinating compaction between API servers (outside the prefix, as upstream). */
export const COMPACT_REV_KEY = 'compact_rev_key';

const ALL_KEYS = Buffer.from([0]);
/** The client's global fault policy without retries (its execute runs the call once). */
/**
 * The etcd3 client (and the gRPC stack and proto files under it) loads on first use, so a server on the
 * embedded store does not spend half a second of its start loading it.
 */
let etcd3Module: typeof Etcd3Module | undefined;
const etcd3 = (): typeof Etcd3Module => (etcd3Module ??= createRequire(import.meta.url)('etcd3') as typeof Etcd3Module);

const ONE_ATTEMPT = { execute: <T>(fn: () => Promise<T>): Promise<T> => fn() } as unknown as NonNullable<NonNullable<ConstructorParameters<typeof Etcd3>[0]>['faultHandling']>['global'];
/** Keys per range call of a whole list. */
const LIST_PAGE = 5000;
const enc = (s: string): Buffer => Buffer.from(s, 'utf8');

/** The smallest key greater than every key that starts with `prefix` (etcd's range_end for a prefix). */
function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]!++;
      return end.subarray(0, i + 1);
    }
  }
  return ALL_KEYS;
}

const isCompacted = (err: Error): boolean => /required revision has been compacted/.test(err.message);
const isFuture = (err: Error): boolean => /required revision is a future revision/.test(err.message);

/** Failures that mean etcd did not answer (down, unreachable, too slow, no leader), not that it refused the call. */
const isUnreachable = (err: Error): boolean =>
  err instanceof etcd3().GRPCUnavailableError ||
  err instanceof etcd3().GRPCDeadlineExceededError ||
  err instanceof etcd3().GRPCCancelledError ||
  err instanceof etcd3().ClientClosedError ||
  err.constructor.name === 'BrokenCircuitError' ||
  etcd3().isRecoverableError(err);

export class Etcd3Store implements Store {
  readonly singleProcess = false;
  /** The name of this store's health check, as upstream names it. */
  readonly healthCheckName = 'etcd';
  private readonly client: Etcd3;
  readonly keys: KeyLayout;
  private readonly feeds = new Set<EtcdFeed>();
  private readonly endpoints: string[];
  private readonly sharedReads = new SharedReads();

  constructor(opts: Etcd3StoreOptions) {
    this.endpoints = opts.endpoints;
    this.keys = new KeyLayout(opts.prefix);
    const timeout = opts.callTimeoutMs ?? 30_000;
    this.client = new (etcd3().Etcd3)({
      hosts: opts.endpoints,
      ...(usesTls(opts) ? { credentials: tlsCredentials(opts) } : {}),
      // unary calls have a deadline; watch streams live as long as they are wanted
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + timeout }),
      // a list of a large collection, or a watch catching up, may be larger than gRPC's 4 MiB default
      grpcOptions: { 'grpc.max_receive_message_length': -1 },
      // one attempt per call: a write whose answer was lost may have been applied, and sending it again
      // would answer the client with its own write as a conflict (the caller sees 503 and decides)
      faultHandling: { global: ONE_ATTEMPT },
    });
  }

  // ---- errors --------------------------------------------------------------------------------

  /** etcd's answers as StoreErrors: compacted and future revisions, and an etcd that cannot be reached. */
  private async storeError(err: unknown, revision = 0): Promise<Error> {
    if (!(err instanceof Error) || err instanceof StoreError) return err as Error;
    if (isCompacted(err)) {
      const compacted = await this.compactedRevision().catch(() => 0);
      return new StoreError('Compacted', `required revision ${revision} has been compacted`, compacted);
    }
    if (isFuture(err)) {
      const current = await this.currentRevision().catch(() => 0);
      return new StoreError('FutureRevision', `required revision ${revision} is a future revision`, current);
    }
    if (isUnreachable(err)) return this.unavailable(err);
    // a call etcd refused (a value larger than its request limit, ...): an internal error naming etcd
    return new Error(`etcd (${this.endpoints.join(',')}) refused the request: ${err.message}`);
  }

  /** Why the last call that reached the network failed (a call the client's circuit breaker stops says only that). */
  private lastFailure = '';

  /** etcd did not answer (down, unreachable, timed out, no leader). */
  unavailable(err: Error): StoreError {
    const held = err.constructor.name === 'BrokenCircuitError';
    if (!held) this.lastFailure = err.message;
    const reason = held && this.lastFailure ? `${this.lastFailure} (calls held back while it lasts)` : err.message;
    return new StoreError('Unavailable', `etcd (${this.endpoints.join(',')}) is unavailable: ${reason}`);
  }

  private async call<T>(fn: () => Promise<T>, revision?: number): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw await this.storeError(err, revision);
    }
  }

  // ---- reads ---------------------------------------------------------------------------------

  /** etcd's current revision, by a linearizable read shared by concurrent callers (see SharedReads). */
  currentRevision(): Promise<number> {
    return this.sharedReads.run('', () => this.call(() => this.client.kv.range({ key: enc(this.keys.root + '/'), count_only: true })).then((res) => Number(res.header.revision)));
  }

  /** The revision recorded in compact_rev_key by the last compaction (upstream's record of it). */
  async compactedRevision(): Promise<number> {
    const res = await this.call(() => this.client.kv.range({ key: enc(COMPACT_REV_KEY) }));
    const kv = res.kvs[0];
    return kv ? Number(kv.value.toString()) || 0 : 0;
  }

  private toKeyValue(kv: IKeyValue): KeyValue | null {
    const key = this.keys.fromEtcd(kv.key.toString('utf8'));
    return key === undefined ? null : { key, value: kv.value, modRevision: Number(kv.mod_revision) };
  }

  async get(key: string, opts: GetOptions = {}): Promise<KeyValue | null> {
    // reads of the latest value are shared by concurrent callers (many creates read their namespace)
    if (opts.revision === undefined) {
      const serializable = opts.serializable === true;
      return this.sharedReads.run(serializable ? `s\u0000${key}` : key, () => this.readLatest(key, serializable));
    }
    const res = await this.call(
      () => this.client.kv.range({ key: enc(this.keys.toEtcd(key)), ...(opts.revision !== undefined ? { revision: opts.revision } : {}) }),
      opts.revision,
    );
    const kv = res.kvs[0];
    return kv ? this.toKeyValue(kv) : null;
  }

  private async readLatest(key: string, serializable = false): Promise<KeyValue | null> {
    const res = await this.call(() => this.client.kv.range({ key: enc(this.keys.toEtcd(key)), ...(serializable ? { serializable: true } : {}) }));
    const kv = res.kvs[0];
    return kv ? this.toKeyValue(kv) : null;
  }

  async list(prefix: string, opts: ListOptions = {}): Promise<ListResult> {
    const etcdPrefix = enc(this.keys.toEtcd(prefix));
    const start = opts.startKey && opts.startKey > prefix ? enc(this.keys.toEtcd(opts.startKey)) : etcdPrefix;
    const limit = opts.limit && opts.limit > 0 ? opts.limit : 0;
    if (!limit) return this.listAll(etcdPrefix, start, opts.revision);
    const res = await this.call(
      () =>
        this.client.kv.range({
          key: start,
          range_end: prefixEnd(etcdPrefix),
          ...(limit ? { limit } : {}),
          ...(opts.revision !== undefined ? { revision: opts.revision } : {}),
        }),
      opts.revision,
    );
    const items: KeyValue[] = [];
    for (const kv of res.kvs) {
      const item = this.toKeyValue(kv);
      if (item) items.push(item);
    }
    const out: ListResult = { items, revision: opts.revision ?? Number(res.header.revision), more: res.more };
    // etcd counts every key in [start, end), the page included
    if (opts.countRemaining) out.remaining = Math.max(0, Number(res.count) - res.kvs.length);
    return out;
  }

  /** A whole range in pages of LIST_PAGE keys, every page at the first one's revision (one snapshot, bounded responses). */
  private async listAll(etcdPrefix: Buffer, start: Buffer, revision: number | undefined): Promise<ListResult> {
    const items: KeyValue[] = [];
    let at = revision;
    for (let from = start; ; ) {
      const res = await this.call(
        () => this.client.kv.range({ key: from, range_end: prefixEnd(etcdPrefix), limit: LIST_PAGE, ...(at !== undefined ? { revision: at } : {}) }),
        at,
      );
      at ??= Number(res.header.revision);
      for (const kv of res.kvs) {
        const item = this.toKeyValue(kv);
        if (item) items.push(item);
      }
      const last = res.kvs.at(-1);
      if (!res.more || !last) return { items, revision: at, more: false };
      from = Buffer.concat([last.key, ALL_KEYS]);
    }
  }

  // ---- writes --------------------------------------------------------------------------------

  /** The key's current modRevision (0: absent), read when a transaction's comparison failed. */
  private currentModRevision(res: { responses: { response_range?: { kvs: IKeyValue[] } }[] }): number {
    const kv = res.responses[0]?.response_range?.kvs[0];
    return kv ? Number(kv.mod_revision) : 0;
  }

  async create(key: string, value: Uint8Array): Promise<WriteResult> {
    const k = enc(this.keys.toEtcd(key));
    const res = await this.call(() =>
      this.client.kv.txn({
        compare: [{ key: k, target: etcd3().CompareTarget.Create, result: etcd3().CompareResult.Equal, create_revision: 0 }],
        success: [{ request_put: { key: k, value: Buffer.from(value.buffer, value.byteOffset, value.byteLength) } }],
        failure: [{ request_range: { key: k } }],
      }),
    );
    if (!res.succeeded) throw new StoreError('KeyExists', `key ${key} exists`, this.currentModRevision(res));
    return { revision: Number(res.header.revision) };
  }

  async update(key: string, expectedRevision: number, value: Uint8Array): Promise<WriteResult> {
    const k = enc(this.keys.toEtcd(key));
    const res = await this.call(() =>
      this.client.kv.txn({
        compare: [{ key: k, target: etcd3().CompareTarget.Mod, result: etcd3().CompareResult.Equal, mod_revision: expectedRevision }],
        success: [{ request_put: { key: k, value: Buffer.from(value.buffer, value.byteOffset, value.byteLength) } }],
        failure: [{ request_range: { key: k } }],
      }),
    );
    if (!res.succeeded) throw this.compareFailed(key, this.currentModRevision(res));
    return { revision: Number(res.header.revision) };
  }

  private compareFailed(key: string, current: number): StoreError {
    return current === 0 ? new StoreError('NotFound', `key ${key} not found`) : new StoreError('Conflict', `key ${key} has revision ${current}`, current);
  }

  async delete(key: string, expectedRevision?: number): Promise<DeleteResult> {
    const k = enc(this.keys.toEtcd(key));
    // without a precondition the key need only exist: mod_revision > 0
    const compare =
      expectedRevision !== undefined
        ? { key: k, target: etcd3().CompareTarget.Mod, result: etcd3().CompareResult.Equal, mod_revision: expectedRevision }
        : { key: k, target: etcd3().CompareTarget.Mod, result: etcd3().CompareResult.Greater, mod_revision: 0 };
    const res = await this.call(() =>
      this.client.kv.txn({
        compare: [compare],
        success: [{ request_delete_range: { key: k, prev_kv: true } }],
        failure: [{ request_range: { key: k } }],
      }),
    );
    if (!res.succeeded) throw this.compareFailed(key, this.currentModRevision(res));
    const prev = res.responses[0]?.response_delete_range?.prev_kvs[0];
    if (!prev) throw new StoreError('NotFound', `key ${key} not found`);
    return { revision: Number(res.header.revision), prev: { key, value: prev.value, modRevision: Number(prev.mod_revision) } };
  }

  // ---- history and feed ----------------------------------------------------------------------

  /** A watch response's events as store events (keys outside the prefix dropped). */
  toEvents(events: IEvent[], prefix?: Buffer): StoreEvent[] {
    const out: StoreEvent[] = [];
    for (const e of events) {
      if (prefix && !e.kv.key.subarray(0, prefix.length).equals(prefix)) continue;
      const key = this.keys.fromEtcd(e.kv.key.toString('utf8'));
      if (key === undefined) continue;
      const ev: StoreEvent = { type: e.type === 'Put' ? 'put' : 'delete', key, revision: Number(e.kv.mod_revision), prevRevision: 0 };
      if (ev.type === 'put') ev.value = e.kv.value;
      if (e.prev_kv) {
        ev.prevValue = e.prev_kv.value;
        ev.prevRevision = Number(e.prev_kv.mod_revision);
      }
      out.push(ev);
    }
    return out;
  }

  /** Opens a raw watch stream over every key from `startRevision`. */
  async openWatch(startRevision: number): Promise<IDuplexStream<IWatchRequest, IWatchResponse>> {
    const stream = await this.client.watchClient.watch();
    stream.write({ create_request: { key: ALL_KEYS, range_end: ALL_KEYS, start_revision: startRevision, prev_kv: true, progress_notify: true } });
    return stream;
  }

  /** Events in (after, current] read from etcd's history through a watch that ends at the current revision. */
  async eventsSince(afterRevision: number, prefix?: string, limit = Infinity): Promise<StoreEvent[]> {
    const upTo = await this.currentRevision();
    if (afterRevision >= upTo) return [];
    const filter = enc(prefix !== undefined ? this.keys.toEtcd(prefix) : this.keys.root + '/');
    const stream = await this.call(() => this.openWatch(afterRevision + 1));
    const out: StoreEvent[] = [];
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(this.unavailable(new Error('history read timed out'))), 30_000);
        const finish = (err?: Error) => {
          clearTimeout(timer);
          if (err) reject(err);
          else resolve();
        };
        stream.on('data', (res: IWatchResponse) => {
          if (res.canceled) return finish(this.watchCanceled(res, afterRevision));
          for (const ev of this.toEvents(res.events, filter)) if (out.length < limit) out.push(ev);
          const last = res.events.at(-1);
          if (out.length >= limit || (last && Number(last.kv.mod_revision) >= upTo)) finish();
        });
        stream.on('error', (err: Error) => finish(this.unavailable(err)));
        stream.on('end', () => finish(this.unavailable(new Error('watch stream ended'))));
      });
    } finally {
      stream.cancel();
    }
    return out;
  }

  /** Why etcd canceled a watch: its start revision was compacted, or another reason. */
  watchCanceled(res: IWatchResponse, afterRevision: number): StoreError {
    const compacted = Number(res.compact_revision);
    if (compacted > 0) return new StoreError('Compacted', `required revision ${afterRevision} has been compacted`, compacted);
    return this.unavailable(new Error(`watch canceled: ${res.cancel_reason}`));
  }

  watch(afterRevision: number, onEvents: (events: StoreEvent[], revision: number) => void, onError: (err: Error) => void): StoreWatch {
    const feed = new EtcdFeed(this, afterRevision, onEvents, onError);
    this.feeds.add(feed);
    feed.open();
    return {
      stop: () => {
        this.feeds.delete(feed);
        feed.stop();
      },
    };
  }

  // ---- compaction ----------------------------------------------------------------------------

  /**
   * One round of compaction coordinated with every API server on this etcd, as upstream's compactor:
   * compact_rev_key's version is a logical clock; the round whose compare-and-swap of the clock wins
   * records and compacts to the revision it saw a round earlier; the others learn the clock and the
   * current revision, so about one compaction per interval happens however many servers run.
   */
  async compactRound(clock: CompactionClock): Promise<CompactionClock & { compacted: number }> {
    const swap = await this.swapCompactRevKey(clock);
    if (!swap.won) return { time: swap.time, revision: swap.revision, compacted: 0 };
    // the first round only starts the clock
    if (clock.revision <= 0) return { time: swap.time, revision: swap.revision, compacted: 0 };
    await this.compactTo(clock.revision);
    return { time: swap.time, revision: swap.revision, compacted: clock.revision };
  }

  /** Records `clock.revision` in compact_rev_key if its version is still `clock.time`; answers the clock now. */
  private async swapCompactRevKey(clock: CompactionClock): Promise<CompactionClock & { won: boolean }> {
    const k = enc(COMPACT_REV_KEY);
    const res = await this.call(() =>
      this.client.kv.txn({
        compare: [{ key: k, target: etcd3().CompareTarget.Version, result: etcd3().CompareResult.Equal, version: clock.time }],
        success: [{ request_put: { key: k, value: enc(String(clock.revision)) } }],
        failure: [{ request_range: { key: k } }],
      }),
    );
    const revision = Number(res.header.revision);
    if (res.succeeded) return { won: true, time: clock.time + 1, revision };
    return { won: false, time: Number(res.responses[0]?.response_range?.kvs[0]?.version ?? 0), revision };
  }

  /** etcd's compaction; a revision already compacted is no error. */
  private async compactTo(revision: number): Promise<void> {
    try {
      await this.client.kv.compact({ revision });
    } catch (err) {
      if (!(err instanceof Error) || !isCompacted(err)) throw await this.storeError(err, revision);
    }
  }

  /** Compacts to `revision` now, recording it in compact_rev_key as a winning compaction round does. */
  async compact(revision: number): Promise<void> {
    let time = 0;
    for (;;) {
      const swap = await this.swapCompactRevKey({ time, revision });
      if (swap.won) return this.compactTo(revision);
      time = swap.time;
    }
  }

  async close(): Promise<void> {
    for (const f of this.feeds) f.stop();
    this.feeds.clear();
    this.client.close();
  }
}

/** TLS when a CA or client certificate is given, or an endpoint is https:// (then the system's roots verify it). */
const usesTls = (opts: Etcd3StoreOptions): boolean => !!opts.caFile || !!opts.certFile || opts.endpoints.some((e) => e.startsWith('https://'));

function tlsCredentials(opts: Etcd3StoreOptions): { rootCertificate: Buffer; privateKey?: Buffer; certChain?: Buffer } {
  return {
    // without --etcd-cafile gRPC verifies etcd against the system's roots
    rootCertificate: (opts.caFile ? readFileSync(opts.caFile) : undefined) as Buffer,
    ...(opts.keyFile ? { privateKey: readFileSync(opts.keyFile) } : {}),
    ...(opts.certFile ? { certChain: readFileSync(opts.certFile) } : {}),
  };
}
