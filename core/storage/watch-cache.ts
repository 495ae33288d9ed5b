/**
 * WatchCache: one resource type's current state and recent history, kept on the main thread and fed
 * in revision order from the store's event feed (through the Cacher). It serves consistent lists and
 * gets without touching the store, and fans events out to watchers:
 *
 * - state: key -> CachedObject (stored bytes, selector attributes), keys kept sorted for paging;
 * - ring: the last `capacity` events, so a watch can resume from a recent resourceVersion, and no
 *   more than `maxBytes` of them (the old versions and frames they hold): a burst of large objects
 *   evicts old events early instead of growing memory;
 * - every event's wire frames are built at most once per (media type, event type, object) however
 *   many watchers receive it;
 * - a watcher sees an object entering its selection as ADDED and leaving it as DELETED (with the
 *   previous state at the event's resourceVersion), as upstream's cacher does.
 *
 * `revision` is the global revision the cache is synced to; `lastEventRevision` is the last revision
 * that changed this resource, so the state is also exact for any revision in between.
 */

import { gradually } from '../api/gradual.js';
import type { ObjectSource } from '../codec/serializer.js';
import { SortedKeys } from './sorted-keys.js';

/** A fan-out pass shorter than this is not followed by a pause (few watchers: events go out at once). */
const MIN_PAUSED_FAN_OUT_MS = 1;
/** The longest pause after a fan-out pass, which bounds what it adds to the delivery of an event. */
const MAX_FAN_OUT_PAUSE_MS = 50;
/** The pause after a long fan-out pass, as a share of the pass: the fan-out takes up to two thirds of the thread. */
const FAN_OUT_PAUSE_RATIO = 0.5;
/** The longest a fan-out pass runs before it lets the event loop serve requests (and goes on after). */
const FAN_OUT_SLICE_MS = 8;

export interface CachedObject {
  key: string;
  namespace: string;
  name: string;
  /** modRevision; for the object of a DELETED event, the deletion revision. */
  revision: number;
  /** Stored bytes: canonical JSON without TypeMeta and resourceVersion. */
  stored: Uint8Array;
  labels: Readonly<Record<string, string>> | undefined;
  /** Field-selector attributes (metadata.name, metadata.namespace and the kind's own). */
  fields: Readonly<Record<string, string>>;
  /** Where this version's resourceVersion goes in its stored bytes (resourceVersionPlace), found on first list. */
  rvPlace?: number;
  /** Encodings of this version by serializer form, built on first use. */
  encodings?: Map<string, Uint8Array>;
  /** This version as serializer input (built-in kinds), made on first read: a list allocates nothing per item for it. */
  source?: ObjectSource;
  /** The decoded object, built once for every reader (listers, serializers): shared, never mutated. */
  decoded?: unknown;
  /** Why the stored bytes are not an object (a value written to the store by something else, or damaged): reads of it fail naming it. */
  unreadable?: string;
  /** Custom resources: this version as each served version shows it (stored form, then list-item JSON), by view key. */
  views?: Map<string, { bytes: Buffer; item?: Buffer; value?: Record<string, unknown> }>;
}

/**
 * Objects stored larger than this keep no memoized copies (list-item JSON, decoded value, encodings):
 * each read builds what it needs and lets it go. A copy saved per read is worth little next to
 * writing a large object out, and memos would double or triple what the cache holds (a burst of
 * 0.9 MB ConfigMaps, listed once, was held about three times over).
 */
export const MEMO_MAX_STORED_BYTES = 64 * 1024;

/** Whether memos of this version are kept on it (see MEMO_MAX_STORED_BYTES). */
export const keepsMemos = (o: CachedObject): boolean => o.stored.byteLength <= MEMO_MAX_STORED_BYTES;

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface CacheEvent {
  type: WatchEventType;
  revision: number;
  /** New state; for DELETED the last state re-stamped with the deletion revision. */
  object: CachedObject;
  /** State before the event (MODIFIED and DELETED). */
  prev: CachedObject | undefined;
  /** Bytes this event holds while in the ring (set when recorded). */
  bytes?: number;
  /** Memoized frames per response form (FrameVariant.key), indexed by Selection code. */
  frames?: Map<string, (Uint8Array | undefined)[]>;
}

/**
 * How an event looks through a watcher's selection: nothing, the new object as ADDED or MODIFIED,
 * the deleted object, or (leaving the selection) the previous object as DELETED.
 */
export const enum Selection {
  None = 0,
  Added = 1,
  Modified = 2,
  Deleted = 3,
  LeftSelection = 4,
}

/** What a watcher selects; evaluated per object. */
export type ObjectFilter = (o: CachedObject) => boolean;

/** One response form of watch frames (serializer, transform, spelling): watches with equal keys share frames. */
export interface FrameVariant {
  key: string;
  encode(type: WatchEventType, object: CachedObject): Uint8Array;
}

export interface CacheWatcher {
  /** Receives every event of the resource in revision order; returns false once closed (dropped). */
  onEvent(ev: CacheEvent): boolean;
  /** Whether what it was sent before is still waiting to go out (its events can come after the others'). */
  behind?(): boolean;
  /**
   * Its transport sends what it was handed in a later phase of the event loop (an HTTP/2 session
   * flushes its streams' frames in the loop's check phase): the cost of a pass shows there.
   */
  readonly sendsAfterTurn?: boolean;
  /** The cache was reset (feed restarted): the watcher can no longer be kept consistent. */
  close(reason: string): void;
}

/**
 * An in-process reader that follows the cache for as long as the server runs (listers, controllers):
 * unlike a watcher it is never dropped, and is told when the state is replaced wholesale.
 */
export interface CacheObserver {
  onEvent(ev: CacheEvent): void;
  /** The state was replaced (feed restarted): rebuild anything derived from it. */
  onReset(): void;
}

/** Describes stored bytes for selection: namespace, name, labels, selectable fields. */
export type ObjectDescriber = (key: string, stored: Uint8Array, revision: number) => CachedObject;

export interface WatchCacheOptions {
  prefix: string;
  capacity: number;
  /** Bytes the ring may hold (old object versions and their memoized frames), beyond which old events go. */
  maxBytes: number;
  describe: ObjectDescriber;
  /** The entry of a value that could not be read back (kept so its key is known; reads of it fail naming it). */
  describeUnreadable?: (key: string, stored: Uint8Array, revision: number, reason: string) => CachedObject;
  /** The fan-out's clock in milliseconds (performance.now() by default; a test's clock makes its timing rules exact). */
  now?: () => number;
}

export class WatchCache {
  readonly prefix: string;
  private readonly objects = new Map<string, CachedObject>();
  private readonly sortedKeys = new SortedKeys();
  /** The objects in key order (aligned with sortedKeys.sorted()), built by the first ordered read after a change. */
  private ordered: CachedObject[] | undefined;
  private readonly ring: (CacheEvent | undefined)[];
  private ringStart = 0;
  private ringSize = 0;
  /** Bytes held by the events in the ring (see eventBytes). */
  private ringBytes = 0;
  private readonly watchers = new Set<CacheWatcher>();
  /** Events recorded but not yet handed to the watchers (see fanOut). */
  private forWatchers: CacheEvent[] = [];
  private fanOutTimer: NodeJS.Timeout | undefined;
  /** Until then (on the fan-out's clock) recorded events wait for the next fan-out pass. */
  private nextFanOutAt = 0;
  private readonly now: () => number;
  /** Keys whose entry could not be read back, for a later look (readableAgain); kept by entry(). */
  private readonly unreadable = new Set<string>();
  private readonly observers: CacheObserver[] = [];
  /** Global revision the cache reflects. */
  revision = 0;
  /** Revision of the last event that changed this resource. */
  lastEventRevision = 0;
  /** Oldest revision a watch can resume from out of the ring (exclusive start). */
  private oldestResumable = 0;

  constructor(private readonly opts: WatchCacheOptions) {
    this.prefix = opts.prefix;
    this.ring = new Array(opts.capacity);
    this.now = opts.now ?? (() => performance.now());
  }

  // ---- state ---------------------------------------------------------------------------------

  /** Replaces the whole state (initial list at `revision`). */
  reset(objects: { key: string; value: Uint8Array; modRevision: number; unreadable?: string }[], revision: number): void {
    this.objects.clear();
    this.ordered = undefined;
    this.unreadable.clear();
    for (const kv of objects) this.objects.set(kv.key, this.entry(kv.key, kv.value, kv.modRevision, kv.unreadable));
    this.sortedKeys.reset([...this.objects.keys()]);
    this.forWatchers = [];
    // a pass in slices ends here (its watchers are all closed below), and the next starts afresh
    if (this.pass) {
      this.pass = undefined;
      this.passing = false;
    }
    clearTimeout(this.fanOutTimer);
    this.fanOutTimer = undefined;
    for (const w of this.watchers) w.close('watch cache was re-initialized');
    this.watchers.clear();
    this.revision = revision;
    this.lastEventRevision = revision;
    this.oldestResumable = revision;
    this.ringStart = 0;
    this.ringSize = 0;
    this.ringBytes = 0;
    for (const o of this.observers) o.onReset();
  }

  private entry(key: string, value: Uint8Array, revision: number, unreadable: string | undefined): CachedObject {
    if (unreadable === undefined) {
      this.unreadable.delete(key);
      return this.opts.describe(key, value, revision);
    }
    this.unreadable.add(key);
    return this.opts.describeUnreadable?.(key, value, revision, unreadable) ?? { key, namespace: '', name: key, revision, stored: value, labels: undefined, fields: {}, unreadable };
  }

  /** Watchers open on this resource now (API Priority and Fairness charges writes by it). */
  get watcherCount(): number {
    return this.watchers.size;
  }

  get size(): number {
    return this.objects.size;
  }

  /**
   * Finds what each object present now is (its selection attributes and readability, which entries
   * may leave to their first use), `sliceMs` of the thread at a time: a restart is ready before the
   * pass over every object, and the first LIST after it does not pay for the pass.
   */
  describeGradually(sliceMs: number, stopped: () => boolean): Promise<void> {
    return gradually(this.keys(), (key) => void this.objects.get(key)?.unreadable, {
      sliceMs,
      stopped,
      failed: (key, err) => console.error(`svc-apiserver: describing ${key}: ${err.message}`),
    });
  }

  /** The keys of every object now, in no particular order (a range sorts them first). */
  keys(): string[] {
    return [...this.objects.keys()];
  }

  get(key: string): CachedObject | undefined {
    return this.objects.get(key);
  }

  /** Objects with keys under `prefix` from `startKey` (inclusive), in key order. */
  *range(prefix: string, startKey?: string): Generator<CachedObject> {
    const { objects, from, end } = this.bounds(prefix, startKey);
    for (let i = from; i < end; i++) yield objects[i]!;
  }

  /** The objects in key order and the index range under `prefix` from `startKey` (a walk with no generator). */
  bounds(prefix: string, startKey?: string): { objects: readonly CachedObject[]; from: number; end: number } {
    const first = startKey && startKey > prefix ? startKey : prefix;
    // keys under the prefix sort below prefix + U+FFFF: two binary searches bound the walk
    return { objects: this.orderedObjects(), from: this.sortedKeys.lowerBound(first), end: this.sortedKeys.lowerBound(prefix + '\uffff') };
  }

  /** The objects in key order: a list walks an array instead of looking each key up. */
  private orderedObjects(): CachedObject[] {
    if (this.ordered) return this.ordered;
    const keys = this.sortedKeys.sorted();
    const out = new Array<CachedObject>(keys.length);
    for (let i = 0; i < keys.length; i++) out[i] = this.objects.get(keys[i]!)!;
    return (this.ordered = out);
  }

  /** Number of keys under `prefix` at or after `startKey`. */
  countFrom(prefix: string, startKey: string): number {
    const a = this.sortedKeys.lowerBound(startKey > prefix ? startKey : prefix);
    const b = this.sortedKeys.lowerBound(prefix + '\uffff');
    return Math.max(0, b - a);
  }

  /** Whether the state equals the state at `revision` (nothing changed this resource since). */
  isExactAt(revision: number): boolean {
    return revision >= this.lastEventRevision && revision <= this.revision;
  }

  // ---- events --------------------------------------------------------------------------------

  /** Applies one store event (revision order is the caller's duty). */
  applyPut(key: string, value: Uint8Array, revision: number, unreadable?: string): void {
    const next = this.entry(key, value, revision, unreadable);
    const prev = this.objects.get(key);
    this.objects.set(key, next);
    this.ordered = undefined;
    if (!prev) this.sortedKeys.add(key);
    this.record({ type: prev ? 'MODIFIED' : 'ADDED', revision, object: next, prev });
  }

  applyDelete(key: string, revision: number): void {
    const prev = this.objects.get(key);
    if (!prev) return;
    this.objects.delete(key);
    this.unreadable.delete(key);
    this.ordered = undefined;
    this.sortedKeys.delete(key);
    this.record({ type: 'DELETED', revision, object: restamp(prev, revision), prev });
  }

  /** Up to `limit` keys whose entry could not be read back. */
  unreadableKeys(limit: number): string[] {
    const keys: string[] = [];
    for (const k of this.unreadable) {
      if (keys.length === limit) break;
      keys.push(k);
    }
    return keys;
  }

  /**
   * An entry that could not be read back, read now from the same stored value (its KMS plugin is back,
   * a reloaded configuration has its key): the object did not change, so no event is recorded for
   * watchers; observers (listers) see it come in as modified. False when the entry moved on meanwhile.
   */
  readableAgain(key: string, value: Uint8Array, revision: number): boolean {
    const prev = this.objects.get(key);
    if (!prev?.unreadable || prev.revision !== revision) return false;
    const next = this.entry(key, value, revision, undefined);
    this.objects.set(key, next);
    this.ordered = undefined;
    for (const o of this.observers) o.onEvent({ type: 'MODIFIED', revision, object: next, prev });
    return true;
  }

  /** Marks the cache synced to `revision` (no further events for this resource up to it). */
  advance(revision: number): void {
    if (revision > this.revision) this.revision = revision;
  }

  private record(ev: CacheEvent): void {
    this.revision = ev.revision;
    this.lastEventRevision = ev.revision;
    const cap = this.ring.length;
    if (this.ringSize === cap) this.evictOldest();
    this.ring[(this.ringStart + this.ringSize) % cap] = ev;
    this.ringSize++;
    ev.bytes = eventBytes(ev);
    this.ringBytes += ev.bytes;
    // the newest event always stays: a watcher at the head must get it
    while (this.ringBytes > this.opts.maxBytes && this.ringSize > 1) this.evictOldest();
    for (const o of this.observers) o.onEvent(ev);
    if (this.watchers.size === 0) return;
    this.forWatchers.push(ev);
    if (!this.fanOutTimer && !this.passing) this.scheduleFanOut();
  }

  private scheduleFanOut(): void {
    const wait = this.nextFanOutAt - this.now();
    if (wait <= 0) this.fanOut();
    else this.fanOutTimer = setTimeout(this.fanOutLater, wait).unref();
  }

  private readonly fanOutLater = (): void => {
    this.fanOutTimer = undefined;
    this.fanOut();
  };

  /**
   * Hands the waiting events to every watcher, each watcher's in one pass (their transport sends what
   * one pass writes as one write). A pass that took long (many watchers: each write is encrypted for
   * its own connection) is followed by a pause of FAN_OUT_PAUSE_RATIO of its length, up to
   * MAX_FAN_OUT_PAUSE_MS, during which new events wait and then go out together: the fan-out takes at
   * most about two thirds of the request thread instead of holding every other request behind it, and
   * the next pass writes several events per watcher at once. Cheap passes never pause. A pass goes on
   * in slices of FAN_OUT_SLICE_MS, between which the event loop serves requests (and sends the
   * slice's writes): with 1,000 watchers a batch of events can take 100 ms, which no write should wait.
   */
  private fanOut(): void {
    const events = this.forWatchers;
    if (events.length === 0) return;
    this.forWatchers = [];
    // watchers whose client keeps up first; those still sending earlier events can wait for theirs
    const first: CacheWatcher[] = [];
    let behind: CacheWatcher[] | undefined;
    for (const w of this.watchers) {
      if (w.behind?.()) (behind ??= []).push(w);
      else first.push(w);
    }
    this.pass = { events, watchers: behind ? first.concat(behind) : first, next: 0, sendsAfterTurn: false };
    this.passing = true;
    // the pass's cost is its first slice and all from the end of the code that recorded the event to
    // the pass's end (later slices, the writes' sending), not what that code does after recording
    process.nextTick(this.markFirstSliceDone);
    const start = this.now();
    this.continuePass();
    this.firstSlice = this.now() - start;
  }

  private readonly continuePass = (): void => {
    const pass = this.pass;
    if (!pass) return;
    const sliceStart = this.now();
    const { events, watchers } = pass;
    while (pass.next < watchers.length) {
      const w = watchers[pass.next++]!;
      if (w.sendsAfterTurn) pass.sendsAfterTurn = true;
      this.handOver(w, events);
      if ((pass.next & 31) === 0 && pass.next < watchers.length && this.now() - sliceStart > FAN_OUT_SLICE_MS) {
        // the slice's writes leave (uncorked, or sent by their sessions) before the next slice
        setImmediate(this.continuePass);
        return;
      }
    }
    this.pass = undefined;
    // the pass's writes leave when their transports uncork, in ticks queued during the pass, and
    // HTTP/2 sessions send theirs in the next check phase (at 1,000 sessions that is most of the
    // pass's cost): the pass ends after them, so that its pause is measured on all of it
    process.nextTick(pass.sendsAfterTurn ? this.endPassAfterSends : this.endPass);
  };

  /** Ends the pass once the check phase has run the sessions' sends (immediates queued now run after them). */
  private readonly endPassAfterSends = (): void => {
    setImmediate(this.endPass);
  };

  private handOver(w: CacheWatcher, events: CacheEvent[]): void {
    for (const ev of events) {
      if (!w.onEvent(ev)) {
        this.watchers.delete(w);
        return;
      }
    }
  }

  /** The pass under way: its events, the watchers in the order they get them, and how far it got. */
  private pass: { events: CacheEvent[]; watchers: CacheWatcher[]; next: number; sendsAfterTurn: boolean } | undefined;
  /** A pass is under way: from its start to the end of its writes (events recorded meanwhile wait for the next). */
  private passing = false;
  /** How long the pass's first slice ran. */
  private firstSlice = 0;
  /** When the code that recorded the pass's first event was done (the first tick after it, queued before the slice's writes). */
  private firstSliceDoneAt = 0;
  private readonly markFirstSliceDone = (): void => {
    this.firstSliceDoneAt = this.now();
  };
  private readonly endPass = (): void => {
    this.passing = false;
    const end = this.now();
    const took = this.firstSlice + (end - this.firstSliceDoneAt);
    this.nextFanOutAt = took < MIN_PAUSED_FAN_OUT_MS ? 0 : end + Math.min(took * FAN_OUT_PAUSE_RATIO, MAX_FAN_OUT_PAUSE_MS);
    if (this.forWatchers.length && !this.fanOutTimer) this.scheduleFanOut();
  };

  /** Until when (on the fan-out's clock) events recorded now wait for the next pass; 0 when they go out at once. */
  get fanOutPausedUntil(): number {
    return this.nextFanOutAt;
  }

  /** The revision every watcher has been handed all events up to (a bookmark must not pass events still waiting). */
  get watchersRevision(): number {
    // a pass still under way has not handed its events to every watcher yet
    const waiting = this.pass?.events[0] ?? this.forWatchers[0];
    return waiting ? waiting.revision - 1 : this.revision;
  }

  /** Drops the oldest event; resumptions from before it replay the store's history instead. */
  private evictOldest(): void {
    const cap = this.ring.length;
    const ev = this.ring[this.ringStart]!;
    this.oldestResumable = ev.revision;
    this.ringBytes -= ev.bytes ?? 0;
    this.ring[this.ringStart] = undefined;
    this.ringStart = (this.ringStart + 1) % cap;
    this.ringSize--;
  }

  /** Bytes the ring holds now (for tests and metrics). */
  get heldBytes(): number {
    return this.ringBytes;
  }

  /** Events after `revision` out of the ring, or undefined when the ring no longer reaches back that far. */
  eventsAfter(revision: number): CacheEvent[] | undefined {
    if (revision < this.oldestResumable) return undefined;
    const out: CacheEvent[] = [];
    const cap = this.ring.length;
    // binary search over the ring for the first event with revision > `revision`
    let lo = 0;
    let hi = this.ringSize;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.ring[(this.ringStart + mid) % cap]!.revision <= revision) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.ringSize; i++) out.push(this.ring[(this.ringStart + i) % cap]!);
    return out;
  }

  // ---- watchers ------------------------------------------------------------------------------

  addWatcher(w: CacheWatcher): void {
    this.watchers.add(w);
  }
  removeWatcher(w: CacheWatcher): void {
    this.watchers.delete(w);
  }
  /** Adds a reader that follows every event from now on; observers run before watchers, in order. */
  observe(o: CacheObserver): void {
    this.observers.push(o);
  }
  unobserve(o: CacheObserver): void {
    const i = this.observers.indexOf(o);
    if (i >= 0) this.observers.splice(i, 1);
  }

  /** The frame of `ev` as seen through a selection, in a form (memoized on the event per form and selection). */
  frame(ev: CacheEvent, variant: FrameVariant, sel: Selection): Uint8Array {
    if (!ev.frames) ev.frames = new Map();
    let byCode = ev.frames.get(variant.key);
    if (!byCode) ev.frames.set(variant.key, (byCode = []));
    let f = byCode[sel];
    if (!f) {
      f =
        sel === Selection.LeftSelection
          ? variant.encode('DELETED', restamp(ev.prev!, ev.revision))
          : variant.encode(sel === Selection.Added ? 'ADDED' : sel === Selection.Modified ? 'MODIFIED' : 'DELETED', ev.object);
      byCode[sel] = f;
      // frames live as long as their event: count them against the ring's bytes
      if (ev.bytes !== undefined) {
        ev.bytes += f.byteLength;
        this.ringBytes += f.byteLength;
      }
    }
    return f;
  }
}

/** How an event looks to a watcher with `filter` (upstream cacher's translation). */
export function selectEvent(ev: CacheEvent, filter: ObjectFilter): Selection {
  if (ev.type === 'DELETED') return filter(ev.prev!) ? Selection.Deleted : Selection.None;
  const cur = filter(ev.object);
  const prev = ev.prev !== undefined && filter(ev.prev);
  if (cur) return prev ? Selection.Modified : Selection.Added;
  return prev ? Selection.LeftSelection : Selection.None;
}

/** The same object version announced at another revision (a deletion): fresh encodings, not the old ones. */
export function restamp(o: CachedObject, revision: number): CachedObject {
  const r: CachedObject = { key: o.key, namespace: o.namespace, name: o.name, revision, stored: o.stored, labels: o.labels, fields: o.fields };
  // converted views are kept (their resourceVersion is stamped on use)
  if (o.views) r.views = new Map([...o.views].map(([k, v]) => [k, { bytes: v.bytes }]));
  return r;
}

/**
 * What an event keeps alive: its object version's stored bytes, about as much again for that version's
 * memoized encodings (list-item JSON, decoded value), and the frames counted as they are built.
 */
function eventBytes(ev: CacheEvent): number {
  return 2 * ev.object.stored.byteLength + 256;
}
