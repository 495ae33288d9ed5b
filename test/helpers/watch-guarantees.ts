/**
 * Named checks over recorded watch histories, in the spirit of etcd's robustness validators: a test
 * records what it wrote (each write's resourceVersion and resulting object) and what its watchers
 * received, then asks each check for its violations. Every check returns a list of human-readable
 * problems; an empty list means the guarantee held, so a test can simply `t.same(check(...), [])`
 * and see exactly what went wrong when it did not.
 *
 *   validateOrdered      change events arrive in strictly increasing resourceVersion order
 *   validateUnique       no change is delivered twice
 *   validateAtomic       every event carries one whole committed write, as that write left the object
 *   validateReliable     between two revisions nothing the watcher selects is missing or invented
 *   validateResumable    a watch restarted from any received resourceVersion continues the history
 *   validateBookmarkable bookmarks never go backwards and promise nothing later events contradict
 *
 * resourceVersions are opaque to clients in general; these checks rely on this server's documented
 * storage model (one global integer revision per committed write), as etcd's validators do.
 */
import type { Client, WatchEvent, WatchReader } from './client.js';

// ---- recorded data ---------------------------------------------------------------------------

/** One acknowledged write, as the client saw it. */
export interface WriteRecord {
  op: 'create' | 'update' | 'delete';
  /** `<namespace>/<name>` (namespace empty for cluster-scoped objects). */
  key: string;
  /** The revision the write was committed at (for a delete: the deletion's revision). */
  rv: number;
  /** The object as the write left it; for a delete, the last state before deletion. */
  object: ApiLike;
  /** Order in which the client issued and saw the acknowledgement of the write (WriteLog). */
  issued?: number;
  acked?: number;
}

/** The parts of an object the checks look at. */
export interface ApiLike {
  kind?: string;
  apiVersion?: string;
  metadata: { name?: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string>; [k: string]: unknown };
  [k: string]: unknown;
}

export const rvOf = (o: { metadata?: { resourceVersion?: string } } | undefined): number => Number(o?.metadata?.resourceVersion ?? NaN);
export const keyOf = (o: { metadata?: { name?: string; namespace?: string } }): string => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

const isChange = (e: WatchEvent): boolean => e.type === 'ADDED' || e.type === 'MODIFIED' || e.type === 'DELETED';
const describe = (e: WatchEvent): string => (isChange(e) ? `${e.type} ${keyOf(e.object)}@${rvOf(e.object)}` : `${e.type}@${rvOf(e.object)}`);

/** A write record from a create/update response body. */
export function writeOf(op: 'create' | 'update', body: ApiLike): WriteRecord {
  return { op, key: keyOf(body), rv: rvOf(body), object: body };
}

/** A write record for a delete: the last state of the object, re-stamped with the deletion's revision. */
export function deleteOf(last: ApiLike, deletionRv: number): WriteRecord {
  return { op: 'delete', key: keyOf(last), rv: deletionRv, object: last };
}

// ---- recording -------------------------------------------------------------------------------

/**
 * Performs writes and records them. A delete of most kinds is answered with a Status that carries
 * no resourceVersion, so its revision is unknown to the client. Deletes therefore run alone (every
 * other write drained before, none started until it is acknowledged: a readers-writer lock with
 * creates and updates as readers), which pins each deletion between two known revisions;
 * `resolveDeletions` then infers it by counting, without trusting any watch.
 */
export class WriteLog {
  readonly writes: WriteRecord[] = [];
  private seq = 0;
  private readonly lock = new RwLock();
  constructor(private readonly client: Client) {}

  private async run(op: WriteRecord['op'], call: () => ReturnType<Client['get']>, last?: ApiLike): Promise<ApiLike> {
    const exclusive = op === 'delete';
    await this.lock.acquire(exclusive);
    try {
      const issued = ++this.seq;
      const r = await call();
      const acked = ++this.seq;
      if (r.status !== 200 && r.status !== 201) throw new Error(`${op} failed with ${r.status}: ${r.text}`);
      const body = r.json as ApiLike;
      if (op === 'delete') {
        const rv = body.kind === 'Status' ? NaN : rvOf(body);
        this.writes.push({ op, key: keyOf(last!), rv, object: last!, issued, acked });
        return last!;
      }
      this.writes.push({ op, key: keyOf(body), rv: rvOf(body), object: body, issued, acked });
      return body;
    } finally {
      this.lock.release(exclusive);
    }
  }

  create = (path: string, body: unknown): Promise<ApiLike> => this.run('create', () => this.client.post(path, body));
  update = (path: string, body: unknown): Promise<ApiLike> => this.run('update', () => this.client.put(path, body));
  /** Deletes the object at `path`, whose last state the caller knows (`last`). */
  delete = (path: string, last: ApiLike): Promise<ApiLike> => this.run('delete', () => this.client.delete(path), last);

  /** The highest acknowledged revision so far (deletions included once resolved). */
  get lastRv(): number {
    return Math.max(0, ...this.writes.map((w) => w.rv).filter((r) => Number.isFinite(r)));
  }
}

/** FIFO readers-writer lock. */
class RwLock {
  private readers = 0;
  private writer = false;
  private readonly queue: { exclusive: boolean; go: () => void }[] = [];
  private free(exclusive: boolean): boolean {
    return exclusive ? !this.writer && this.readers === 0 : !this.writer;
  }
  private take(exclusive: boolean): void {
    if (exclusive) this.writer = true;
    else this.readers++;
  }
  acquire(exclusive: boolean): Promise<void> {
    if (this.queue.length === 0 && this.free(exclusive)) {
      this.take(exclusive);
      return Promise.resolve();
    }
    return new Promise((go) => this.queue.push({ exclusive, go }));
  }
  release(exclusive: boolean): void {
    if (exclusive) this.writer = false;
    else this.readers--;
    while (this.queue.length && this.free(this.queue[0]!.exclusive)) {
      const next = this.queue.shift()!;
      this.take(next.exclusive);
      next.go();
    }
  }
}

/**
 * Fills in the revision of each delete recorded without one. Every revision is one committed write,
 * so a run of k deletes that ran alone between acknowledged revisions L and U with U - L - 1 == k
 * took exactly L+1 .. L+k, in the order issued (a gap of another size means some other writer
 * committed meanwhile, and the inference is refused). Deletes that cannot be inferred are pinned from
 * `reference` (a history that saw every write), if given, within the same bounds. Returns problems.
 */
export function resolveDeletions(writes: WriteRecord[], reference?: readonly WatchEvent[]): string[] {
  const problems: string[] = [];
  const known = writes.filter((w) => Number.isFinite(w.rv));
  const pending = writes.filter((w) => w.op === 'delete' && !Number.isFinite(w.rv)).sort((a, b) => a.issued! - b.issued!);
  const bounds = new Map<WriteRecord, { lo: number; hi: number; alone: boolean }>();
  for (const d of pending) {
    const alone = writes.every((w) => w === d || w.acked! < d.issued! || w.issued! > d.acked!);
    const before = known.filter((w) => w.acked! < d.issued!).map((w) => w.rv);
    const after = known.filter((w) => w.issued! > d.acked!).map((w) => w.rv);
    bounds.set(d, { lo: Math.max(0, rvOf(d.object), ...before), hi: after.length ? Math.min(...after) : Infinity, alone });
  }
  // group deletes sharing the same bounds
  const groups = new Map<string, WriteRecord[]>();
  for (const d of pending) {
    const b = bounds.get(d)!;
    const k = `${b.lo}:${b.hi}`;
    groups.set(k, [...(groups.get(k) ?? []), d]);
  }
  for (const [k, ds] of groups) {
    const [lo, hi] = k.split(':').map(Number) as [number, number];
    const inside = known.filter((w) => w.rv > lo && w.rv < hi).length;
    if (ds.every((d) => bounds.get(d)!.alone) && Number.isFinite(hi) && hi - lo - 1 === ds.length && inside === 0) {
      ds.forEach((d, i) => (d.rv = lo + 1 + i));
      continue;
    }
    for (const d of ds) {
      if (!reference) {
        problems.push(`delete of ${d.key}: cannot infer its revision within (${lo}, ${hi}) and no reference history was given`);
        continue;
      }
      const hits = reference.filter((e) => e.type === 'DELETED' && keyOf(e.object) === d.key && rvOf(e.object) > lo && rvOf(e.object) < hi);
      if (hits.length !== 1) problems.push(`delete of ${d.key} (after ${lo}, before ${hi}): ${hits.length} DELETED events within those bounds in the reference history`);
      else d.rv = rvOf(hits[0]!.object);
    }
  }
  return problems;
}

/** Reads events until `done` holds for the events so far, the stream ends, or `timeoutMs` passes. */
export async function collectUntil(reader: WatchReader, done: (events: WatchEvent[]) => boolean, timeoutMs = 10_000): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  const deadline = Date.now() + timeoutMs;
  while (!done(out)) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const e = await reader.next(left);
    if (!e) break;
    out.push(e);
  }
  return out;
}

/** Reads until an event at or past revision `rv` (any type but ERROR) has arrived. */
export const collectThrough = (reader: WatchReader, rv: number, timeoutMs?: number): Promise<WatchEvent[]> =>
  collectUntil(reader, (evs) => evs.some((e) => rvOf(e.object) >= rv && e.type !== 'ERROR'), timeoutMs);

// ---- the checks ------------------------------------------------------------------------------

/** Change events strictly increase in resourceVersion; an ERROR, if any, is the last event. */
export function validateOrdered(events: readonly WatchEvent[]): string[] {
  const problems: string[] = [];
  let last = -Infinity;
  let lastDesc = '';
  events.forEach((e, i) => {
    if (e.type === 'ERROR') {
      if (i !== events.length - 1) problems.push(`ERROR event at position ${i} is followed by ${events.length - 1 - i} more event(s)`);
      return;
    }
    if (!isChange(e)) return;
    const rv = rvOf(e.object);
    if (!Number.isFinite(rv)) problems.push(`${describe(e)} at position ${i} has no numeric resourceVersion`);
    else if (rv <= last) problems.push(`${describe(e)} at position ${i} does not come after ${lastDesc}`);
    if (rv > last) {
      last = rv;
      lastDesc = describe(e);
    }
  });
  return problems;
}

/** No (object, revision) pair and no revision is delivered twice. */
export function validateUnique(events: readonly WatchEvent[]): string[] {
  const problems: string[] = [];
  const seen = new Map<number, string>();
  for (const e of events) {
    if (!isChange(e)) continue;
    const rv = rvOf(e.object);
    const d = describe(e);
    const prior = seen.get(rv);
    if (prior !== undefined) problems.push(prior === d ? `${d} delivered twice` : `revision ${rv} delivered twice: ${prior} and ${d}`);
    else seen.set(rv, d);
  }
  return problems;
}

/** The parts of an object a write decides (everything but server bookkeeping that may legitimately be re-rendered). */
function content(o: ApiLike): string {
  const { metadata, ...rest } = o;
  const { managedFields: _mf, ...meta } = metadata;
  return JSON.stringify(sortKeys({ ...rest, metadata: meta }));
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v as object).sort()) out[k] = sortKeys((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

/**
 * Each change event is one whole committed write: an acknowledged write to the same object at the
 * same revision exists, and the event's object is the state that write produced (for DELETED, the
 * last state before the delete, stamped with the deletion's revision), never a mix of two writes.
 * With `strictTypes` (unfiltered watches) the event type must also match the write
 * (create ADDED, update MODIFIED, delete DELETED); without it (selecting watches) an update may be
 * seen as ADDED (the object entered the selection: its new state) or DELETED (it left: the state
 * before the update, stamped with the update's revision).
 */
export function validateAtomic(events: readonly WatchEvent[], writes: readonly WriteRecord[], strictTypes = true): string[] {
  const problems: string[] = [];
  const byRv = new Map(writes.map((w) => [w.rv, w]));
  const typeOf = { create: 'ADDED', update: 'MODIFIED', delete: 'DELETED' } as const;
  for (const e of events) {
    if (!isChange(e)) continue;
    const rv = rvOf(e.object);
    // unfiltered, a DELETED always carries its deletion's revision; the object's own last one is a known failure mode
    const staleDelete = e.type === 'DELETED' && writes.find((x) => x.op === 'delete' && x.key === keyOf(e.object) && rvOf(x.object) === rv && x.rv !== rv);
    if (strictTypes && staleDelete) {
      problems.push(`${describe(e)} carries the object's previous resourceVersion, not its deletion's (${staleDelete.rv})`);
      continue;
    }
    const w = byRv.get(rv);
    if (!w) {
      const del = writes.find((x) => x.op === 'delete' && x.key === keyOf(e.object) && rvOf(x.object) === rv);
      if (e.type === 'DELETED' && del) problems.push(`${describe(e)} carries the object's previous resourceVersion, not its deletion's (${del.rv})`);
      else problems.push(`${describe(e)} matches no acknowledged write`);
      continue;
    }
    if (w.key !== keyOf(e.object)) {
      problems.push(`${describe(e)} names another object than the write at that revision (${w.key})`);
      continue;
    }
    if (strictTypes && typeOf[w.op] !== e.type) problems.push(`${describe(e)} should be ${typeOf[w.op]} (the write was a ${w.op})`);
    // an update seen as DELETED by a selecting watcher (the object left the selection) carries the state before it
    let state = w.object;
    if (e.type === 'DELETED' && w.op === 'update') {
      const before = writes.filter((x) => x.key === w.key && x.rv < rv && x.op !== 'delete').sort((a, b) => b.rv - a.rv)[0];
      if (!before) {
        problems.push(`${describe(e)}: no earlier write of the object to compare with`);
        continue;
      }
      state = before.object;
    }
    const expected: ApiLike = { ...state, metadata: { ...state.metadata, resourceVersion: String(rv) } };
    if (content(expected) !== content(e.object)) problems.push(`${describe(e)} differs from the state its write produced: got ${content(e.object)}, want ${content(expected)}`);
  }
  return problems;
}

/** What a watcher selecting `filter` must receive for `writes` after `from` up to `to` (the upstream cacher's translation). */
export function expectedEvents(
  writes: readonly WriteRecord[],
  opts: { from: number; to: number; filter?: (o: ApiLike) => boolean; initial?: ReadonlyMap<string, ApiLike> },
): { type: string; key: string; rv: number }[] {
  const filter = opts.filter ?? (() => true);
  const state = new Map<string, ApiLike | undefined>(opts.initial ?? []);
  const out: { type: string; key: string; rv: number }[] = [];
  for (const w of [...writes].sort((a, b) => a.rv - b.rv)) {
    const prev = state.get(w.key);
    const cur = w.op === 'delete' ? undefined : w.object;
    state.set(w.key, cur);
    if (w.rv <= opts.from || w.rv > opts.to) continue;
    const had = prev !== undefined && filter(prev);
    const has = cur !== undefined && filter(cur);
    if (had && has) out.push({ type: 'MODIFIED', key: w.key, rv: w.rv });
    else if (has) out.push({ type: 'ADDED', key: w.key, rv: w.rv });
    else if (had) out.push({ type: 'DELETED', key: w.key, rv: w.rv });
  }
  return out;
}

/**
 * No gaps and nothing invented: the change events with revisions in (from, to] are exactly the
 * writes the watcher selects in that window, in order, with the types a selecting watcher sees
 * (an object entering the selection is ADDED, one leaving it DELETED). `initial` is the state of
 * the objects at `from` when writes before it were not recorded.
 */
export function validateReliable(
  events: readonly WatchEvent[],
  writes: readonly WriteRecord[],
  opts: { from: number; to: number; filter?: (o: ApiLike) => boolean; initial?: ReadonlyMap<string, ApiLike> },
): string[] {
  const want = expectedEvents(writes, opts).map((x) => `${x.type} ${x.key}@${x.rv}`);
  const got = events.filter((e) => isChange(e) && rvOf(e.object) > opts.from && rvOf(e.object) <= opts.to).map(describe);
  return diffSequences(got, want, `window (${opts.from}, ${opts.to}]`);
}

/**
 * A watch resumed from `from` (a resourceVersion the first watcher received) delivers exactly the
 * reference history after `from`: same changes, same order, nothing skipped or repeated. Only the
 * part of the reference up to the last revision the resumed watch reached is compared, unless
 * `complete` says the resumed watch was read to the end of the reference.
 */
export function validateResumable(reference: readonly WatchEvent[], from: number, resumed: readonly WatchEvent[], complete = true): string[] {
  const got = resumed.filter(isChange);
  const upTo = complete ? Infinity : Math.max(from, ...got.map((e) => rvOf(e.object)));
  const want = reference.filter((e) => isChange(e) && rvOf(e.object) > from && rvOf(e.object) <= upTo).map(describe);
  return diffSequences(got.map(describe), want, `resumed from ${from}`);
}

/**
 * Bookmarks are promises: a BOOKMARK at R means every change up to R was sent. So a bookmark never
 * goes backwards (it is >= every earlier event and bookmark), no later change event has a revision
 * <= R, and the bookmark object is of the watched kind holding only metadata.resourceVersion (plus
 * the initial-events-end annotation on the streaming-list bookmark; zero-valued fields allowed).
 */
export function validateBookmarkable(events: readonly WatchEvent[], kind?: { kind: string; apiVersion: string }): string[] {
  const problems: string[] = [];
  let high = -Infinity;
  let promised = -Infinity;
  events.forEach((e, i) => {
    const rv = rvOf(e.object);
    if (e.type === 'BOOKMARK') {
      if (!Number.isFinite(rv)) problems.push(`BOOKMARK at position ${i} has no numeric resourceVersion`);
      if (rv < high) problems.push(`BOOKMARK@${rv} at position ${i} goes backwards (already at ${high})`);
      problems.push(...bookmarkShape(e, i, kind));
      promised = Math.max(promised, rv);
      high = Math.max(high, rv);
    } else if (isChange(e)) {
      if (rv <= promised) problems.push(`${describe(e)} at position ${i} arrives after a BOOKMARK promised everything up to ${promised}`);
      high = Math.max(high, rv);
    }
  });
  return problems;
}

/** The initial-events-end bookmark's annotations: upstream's key (Go reflectors wait for it) and the spec's. */
const INITIAL_EVENTS_END_ANNOTATIONS = { 'k8s.io/initial-events-end': 'true', 'svc.io/initial-events-end': 'true' };

function bookmarkShape(e: WatchEvent, i: number, kind?: { kind: string; apiVersion: string }): string[] {
  const problems: string[] = [];
  const o = e.object as ApiLike;
  if (kind && (o.kind !== kind.kind || o.apiVersion !== kind.apiVersion)) {
    problems.push(`BOOKMARK at position ${i} is ${o.apiVersion}/${o.kind}, not ${kind.apiVersion}/${kind.kind}`);
  }
  // the object is the kind's zero value plus the resourceVersion: zero-valued fields as Go's JSON
  // renders them (`"spec":{}`, `null` times, `""`) carry no data and are allowed
  const extraTop = Object.keys(o).filter((k) => !['kind', 'apiVersion', 'metadata'].includes(k) && !isZero(o[k]));
  if (extraTop.length) problems.push(`BOOKMARK at position ${i} carries data beyond metadata: ${extraTop.join(', ')}`);
  for (const [k, v] of Object.entries(o.metadata ?? {})) {
    if (k === 'resourceVersion' || isZero(v)) continue;
    if (k === 'annotations' && JSON.stringify(v) === JSON.stringify(INITIAL_EVENTS_END_ANNOTATIONS)) continue;
    problems.push(`BOOKMARK at position ${i} carries metadata.${k}`);
  }
  return problems;
}

/** Go's zero values as JSON: null, "", 0, false, [], and objects made only of zero values. */
function isZero(v: unknown): boolean {
  if (v === null || v === undefined || v === '' || v === 0 || v === false) return true;
  if (Array.isArray(v)) return v.length === 0;
  if (typeof v === 'object') return Object.values(v as object).every(isZero);
  return false;
}

/** Line-up of two event sequences, reporting the first divergence and what is missing or extra. */
function diffSequences(got: string[], want: string[], what: string): string[] {
  if (got.length === want.length && got.every((g, i) => g === want[i])) return [];
  const problems: string[] = [];
  const gotSet = new Set(got);
  const wantSet = new Set(want);
  const missing = want.filter((w) => !gotSet.has(w));
  const extra = got.filter((g) => !wantSet.has(g));
  if (missing.length) problems.push(`${what}: missing ${missing.length} event(s): ${missing.slice(0, 10).join(', ')}${missing.length > 10 ? ', ...' : ''}`);
  if (extra.length) problems.push(`${what}: ${extra.length} unexpected event(s): ${extra.slice(0, 10).join(', ')}${extra.length > 10 ? ', ...' : ''}`);
  if (!missing.length && !extra.length) {
    const i = got.findIndex((g, j) => g !== want[j]);
    problems.push(`${what}: same events in a different order or count, first difference at position ${i}: got ${got[i]}, want ${want[i]}`);
  }
  return problems;
}
