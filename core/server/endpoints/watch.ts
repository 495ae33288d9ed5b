/**
 * Watch streams over the WatchCache, with the spec's semantics:
 *   resourceVersion unset: consistent state as synthetic ADDED events, then changes
 *   "0": the cache's state as ADDED events, then changes
 *   n: every change after n (from the ring, or from the store's history when the ring no longer
 *      reaches back; older than the history window: an ERROR event with 410 Expired)
 *   sendInitialEvents=true (streaming list): initial ADDED events, then, with bookmarks allowed, a
 *      BOOKMARK annotated svc.io/initial-events-end at the synced revision
 * Objects entering or leaving the selection arrive as ADDED / DELETED. BOOKMARKs are sent
 * periodically and before the server closes the stream at its timeout. A watcher whose unsent bytes
 * exceed the buffer limit is closed (the client re-watches from its last resourceVersion); an idle
 * watch is only a stream on the main event loop. Frames go to a ResponseSink, whatever the transport.
 */
import { randomInt } from 'node:crypto';
import { errors, type StatusError, toStatusError } from '../../api/status.js';
import type { ListOptions } from '../../request/list-options.js';
import { validateWatchOptions } from '../../request/list-options.js';
import type { Cacher } from '../../storage/cacher.js';
import { StoreError, type Store, type StoreEvent } from '../../storage/interface.js';
import { type CacheEvent, type CachedObject, type CacheWatcher, type FrameVariant, type ObjectFilter, restamp, selectEvent, Selection, type WatchCache } from '../../storage/watch-cache.js';
import { describeStored, selectionFilter, unreadableError } from '../../registry/describe.js';
import { collectionPrefix, resourcePrefix } from '../../registry/keys.js';
import type { ResourceType } from '../../registry/resource-type.js';
import type { ResponseSink } from '../../request/scope.js';
import { addedFrame, bookmarkFrame, errorFrame, frameVariant, prepareViews, type WatchForm } from '../object-encoding.js';
import { connectionKey, SendQueueReader } from '../send-queues.js';

export interface WatchSettings {
  cacher: Cacher;
  store: Store;
  bookmarkIntervalMs: number;
  minRequestTimeoutSeconds: number;
  bufferLimitBytes: number;
  /** The WatchList feature gate (streaming lists with sendInitialEvents). */
  watchList: boolean;
  /** Called when a watch opens and closes (for metrics and shutdown). */
  track?: { open(w: WatchStream): void; close(w: WatchStream): void };
  /** A counter of the frames sent to watchers of a type (apiserver_watch_events_*), made once per watch. */
  meter?: (rt: ResourceType) => WatchMeter;
  /** The stuck-watch sweep's clock and timer (the real ones when unset; see SweepClock). */
  sweepClock?: SweepClock;
}

/**
 * The clock and timer of the stuck-watch sweep. The real ones by default; a test's own makes what a
 * look finds exact: it runs each look itself, at the time it says, instead of sleeping and hoping the
 * sweep has looked by then (a look waits for a thread that reads the kernel's table, which a busy
 * machine can take a second to start).
 */
export interface SweepClock {
  /** Milliseconds, as performance.now(). */
  now(): number;
  /** Runs `fn` once, `ms` from now, without keeping the process alive for it; returns what cancels it. */
  after(ms: number, fn: () => void): () => void;
}

const REAL_CLOCK: SweepClock = {
  now: () => performance.now(),
  after: (ms, fn) => {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

export interface WatchMeter {
  sent(bytes: number): void;
}

export interface WatchTarget {
  rt: ResourceType;
  namespace: string;
  /** Watch of a single object (legacy /watch/.../<name> path). */
  name: string;
  /** Serializer, stream Content-Type, transform and spelling of the frames. */
  form: WatchForm;
  contentType: string;
}

/** Live events a watch may hold back while it writes history or initial state. */
const MAX_BUFFERED_EVENTS = 100_000;

/** How often the watches of a server are looked at for clients that stopped reading. */
const SWEEP_INTERVAL_MS = 500;
/** How soon a watch that may be stuck is looked at again (every look at it reads the kernel's table). */
const RELOOK_MS = 250;

/**
 * Finds watches whose client stopped reading. Node's buffer only grows once the kernel's buffers are
 * full (megabytes per connection on loopback), so each sweep also counts, for an HTTP/1.1 watch, what
 * the kernel holds unacknowledged for its connection. A watch is dropped when more than its bound is
 * unsent and its client took less than a quarter of the bound a second since the previous look:
 * upstream drops a watcher whose buffer stays full past a timeout; this is that rule with the kernel's
 * share counted. A slow but reading client (a large initial state over a long link) keeps its watch.
 * Watches are looked at every half second, and one that may be stuck again a quarter second later.
 * A look that finds more than a quarter of the bound unacknowledged in the kernel, for a client that
 * took less than a quarter of the bound a second since the look before, also holds the watch's next
 * frames until a later look finds the client taking again: until a stuck client is
 * dropped, nothing more is encrypted and written for it (at 1,000 stuck watchers, that writing was
 * most of the request thread's work in the seconds before they were found).
 */
class StuckWatchSweeper {
  private readonly watches = new Set<WatchStream>();
  /** Cancels the next sweep, when one is set. */
  private timer: (() => void) | undefined;
  private readonly kernel = new SendQueueReader();
  /** A sweep waits for the kernel's table: no other starts meanwhile. */
  private busy = false;

  constructor(private readonly clock: SweepClock) {}

  add(w: WatchStream): void {
    this.watches.add(w);
    if (!this.timer && !this.busy) this.schedule(SWEEP_INTERVAL_MS);
  }

  remove(w: WatchStream): void {
    this.watches.delete(w);
    if (this.watches.size) return;
    this.timer?.();
    this.timer = undefined;
    if (!this.busy) this.kernel.close();
  }

  private schedule(ms: number): void {
    this.timer = this.clock.after(ms, this.sweep);
  }

  private readonly sweep = (): void => {
    this.timer = undefined;
    const candidates = [...this.watches].filter((w) => w.mayBeStuck());
    // the kernel's table is read only when some HTTP/1.1 watch could be over its bound, off this thread
    const keys = candidates.flatMap((w) => w.connectionKey ?? []);
    if (keys.length === 0) return this.decide(candidates, undefined);
    this.busy = true;
    void this.kernel.read(keys).then((queues) => {
      this.busy = false;
      this.decide(candidates, queues);
    });
  };

  private decide(candidates: WatchStream[], queues: Map<string, number> | undefined): void {
    const now = this.clock.now();
    for (const w of candidates) w.checkProgress(queues, now);
    // a watch that may be stuck is decided on its next look: soon, so it costs little meanwhile
    if (this.watches.size) this.schedule(candidates.length ? RELOOK_MS : SWEEP_INTERVAL_MS);
    else this.kernel.close();
  }
}

/** One sweeper per server (its watch settings). */
const sweepers = new WeakMap<WatchSettings, StuckWatchSweeper>();
function sweeperFor(s: WatchSettings): StuckWatchSweeper {
  let sw = sweepers.get(s);
  if (!sw) sweepers.set(s, (sw = new StuckWatchSweeper(s.sweepClock ?? REAL_CLOCK)));
  return sw;
}

export class WatchStream implements CacheWatcher {
  private closed = false;
  private replaying: CacheEvent[] | undefined;
  private lastRevision = 0;
  private timers: NodeJS.Timeout[] = [];
  private readonly cache: WatchCache;
  private readonly variant: FrameVariant;
  /** The type's objects are converted by a webhook before their frames can be written. */
  private readonly converting: boolean;
  private readonly convertQueue: CacheEvent[] = [];
  private pumping = false;
  private readonly meter: WatchMeter | undefined;
  /** Bytes the client had taken at the last look at it, and when that was. */
  private lastSweep: { taken: number; at: number } | undefined;

  constructor(
    private readonly s: WatchSettings,
    private readonly t: WatchTarget,
    private readonly o: ListOptions,
    private readonly filter: ObjectFilter,
    private readonly sink: ResponseSink,
  ) {
    this.cache = s.cacher.cacheFor(resourcePrefix(t.rt));
    this.variant = frameVariant(t.rt, t.form);
    this.converting = t.rt.custom?.webhook === true;
    this.meter = s.meter?.(t.rt);
    this.flowControlled = sink.flowControlled === true;
    sink.onClose(() => this.close(''));
  }

  /**
   * Frames held back while the transport buffers more than a quarter of the bound (the kernel's
   * buffers are full: a reading client's momentary backlog stays below it; for an HTTP/2 stream, as
   * soon as it asks to drain: the client's window is used up), or while the kernel held
   * that much unacknowledged at the last look (heldForKernel): a client that is behind gets nothing
   * more encrypted and queued for it until it has taken what it has. The frames are the
   * event's shared ones, so holding them costs a reference each; with what the transport buffers they
   * count against the watch's bound.
   */
  private held: Uint8Array[] | undefined;
  private heldBytes = 0;

  private write(frame: Uint8Array): boolean {
    if (this.closed) return false;
    this.meter?.sent(frame.byteLength);
    if (this.held) {
      this.held.push(frame);
      this.heldBytes += frame.byteLength;
    } else if (this.sendPastHoldMark(frame)) this.holdUntilDrained([]);
    if (this.heldBytes + this.sink.buffered > this.s.bufferLimitBytes) {
      this.dropSlow();
      return false;
    }
    return true;
  }

  /**
   * Hands `frame` to the transport; true when what it buffers is now past the mark where frames are
   * held. An HTTP/2 stream's buffer fills only once the client's window is used up, so its mark is the
   * stream's own: every frame written beyond it is a write queued in Node per stream (and, if the
   * watch is dropped, an error made per queued write), where a held frame is a reference.
   */
  private sendPastHoldMark(frame: Uint8Array): boolean {
    return !this.sink.write(frame) && (this.flowControlled || this.sink.buffered >= this.s.bufferLimitBytes / 4);
  }

  private holdUntilDrained(frames: Uint8Array[]): void {
    this.held = frames;
    this.heldBytes = 0;
    for (const f of frames) this.heldBytes += f.byteLength;
    void this.sink.drained().then((ok) => this.release(ok));
  }

  /** The client took what the transport had: the held frames follow, until its mark is passed again. */
  private release(drained: boolean): void {
    const frames = this.held;
    if (!frames || this.closed) return;
    this.heldForKernel = false;
    this.held = undefined;
    this.heldBytes = 0;
    if (!drained) return;
    for (let i = 0; i < frames.length; i++) {
      if (this.sendPastHoldMark(frames[i]!)) return this.holdUntilDrained(frames.slice(i + 1));
    }
  }

  /** A watch that ends on its own (timeout, ERROR event) still sends what it held, then ends. */
  private flushHeld(): void {
    const frames = this.held;
    this.held = undefined;
    this.heldBytes = 0;
    if (frames) for (const f of frames) this.sink.write(f);
  }

  /** The key of the TCP connection this watch has to itself (HTTP/1.1), for the kernel's count of what is unsent. */
  get connectionKey(): string | undefined {
    const conn = this.sink.ownConnection;
    return conn && connectionKey(conn.localPort, conn.remotePort);
  }

  /**
   * Whether the watch needs a look now: its frames are held for the kernel's queue, or the last look
   * found that queue past a quarter of the bound (a second look tells whether the client still takes),
   * or more than a quarter of the bound was written beyond what the client had taken at the last look
   * (so that a client that stopped is found, and held, within about a second of writes at 200 KB/s).
   * Otherwise less than that can be unsent (idle watches cost no read of the kernel's table).
   */
  mayBeStuck(): boolean {
    if (this.closed) return false;
    const quarter = this.s.bufferLimitBytes / 4;
    return this.heldForKernel || this.lastInKernel >= quarter || (this.sink.bytes ?? 0) - (this.lastSweep?.taken ?? 0) > quarter;
  }

  /**
   * Frames are held because at the last look the kernel held more than a quarter of the bound
   * unacknowledged and the client had taken less than a quarter of the bound a second since the look
   * before (Node's buffer stays empty while the kernel takes megabytes): until a look finds the client
   * taking again, nothing more is encrypted and written for it. A client that reads, however much is in
   * flight to it over a long link, is never held this way.
   */
  private heldForKernel = false;
  /** What the kernel held unacknowledged for the connection at the last look. */
  private lastInKernel = 0;

  /** One sweep's look at whether the client still takes what it is sent (see StuckWatchSweeper). */
  checkProgress(queues: Map<string, number> | undefined, now: number): void {
    if (this.closed) return;
    const key = queues && this.connectionKey;
    const inKernel = key ? (queues.get(key) ?? 0) : 0;
    const queued = this.sink.buffered + inKernel;
    const taken = (this.sink.bytes ?? 0) - queued;
    const unsent = this.heldBytes + queued;
    const bound = this.s.bufferLimitBytes;
    const last = this.lastSweep;
    this.lastSweep = { taken, at: now };
    this.lastInKernel = inKernel;
    // the client took less than a quarter of the bound a second since the previous look
    const slow = last !== undefined && taken - last.taken < ((bound / 4) * (now - last.at)) / 1000;
    if (inKernel >= bound / 4 && slow) {
      // (with nothing held, heldBytes is already 0)
      if (!this.held) {
        this.held = [];
        this.heldForKernel = true;
      }
    } else if (this.heldForKernel) this.release(true);
    // a client that is slow so must not keep a backlog past the bound
    if (slow && unsent > bound) this.dropSlow();
  }

  /**
   * Ends a watch whose client does not take what it is sent, dropping its connection (HTTP/1.1) or
   * stream (HTTP/2): what waits for it would never be read. The client resumes from its last
   * resourceVersion.
   */
  private dropSlow(): void {
    if (this.closed) return;
    this.held = undefined;
    this.heldBytes = 0;
    this.close('watcher is too slow');
    this.sink.abort();
  }

  /** The frame this watcher gets for `ev`, if any (each revision once). */
  private frameFor(ev: CacheEvent): Uint8Array | undefined {
    if (ev.revision <= this.lastRevision) return undefined;
    const unreadable = ev.object.unreadable ? ev.object : ev.prev?.unreadable ? ev.prev : undefined;
    // an object that cannot be decoded ends the watch with an ERROR event naming it, as upstream's etcd watcher does
    if (unreadable && this.filter(unreadable)) {
      this.failWith(unreadableError(unreadable));
      return undefined;
    }
    const sel = selectEvent(ev, this.filter);
    this.lastRevision = ev.revision;
    return sel === Selection.None ? undefined : this.cache.frame(ev, this.variant, sel);
  }

  private deliver(ev: CacheEvent): boolean {
    if (this.converting) return this.enqueueConverted(ev);
    const frame = this.frameFor(ev);
    return frame ? this.write(frame) : true;
  }

  /** deliver() with backpressure, for history and initial state. */
  private async deliverPaced(ev: CacheEvent): Promise<boolean> {
    if (this.converting) await prepareViews(this.t.rt, [ev.object, ev.prev]);
    const frame = this.frameFor(ev);
    return frame ? this.writePaced(frame) : true;
  }

  /**
   * Types converted by a webhook: events wait, in order, for their objects to be converted before
   * their frames are written; a failing conversion ends the watch with an ERROR event.
   */
  private enqueueConverted(ev: CacheEvent): boolean {
    this.convertQueue.push(ev);
    if (!this.pumping) void this.pumpConverted();
    return true;
  }

  private async pumpConverted(): Promise<void> {
    this.pumping = true;
    while (this.convertQueue.length && !this.closed) {
      const ev = this.convertQueue.shift()!;
      try {
        await prepareViews(this.t.rt, [ev.object, ev.prev]);
      } catch (err) {
        this.failWith(toStatusError(err));
        break;
      }
      const frame = this.frameFor(ev);
      if (frame && !this.write(frame)) break;
    }
    this.pumping = false;
  }

  /**
   * Still sending earlier frames: some are held or buffered, or at the last look the kernel held more
   * than a quarter of the bound for the connection (a client that reads keeps that queue short: its
   * events go out before those of one that may have stopped, which the looks take a second to prove).
   */
  behind(): boolean {
    return this.held !== undefined || this.sink.buffered > 0 || this.lastInKernel >= this.s.bufferLimitBytes / 4;
  }

  private readonly flowControlled: boolean;

  /** HTTP/2 streams are sent by their session after the turn (see CacheWatcher). */
  get sendsAfterTurn(): boolean {
    return this.flowControlled;
  }

  onEvent(ev: CacheEvent): boolean {
    if (this.closed) return false;
    if (this.replaying) {
      // live events wait while history or initial state is written; a client that never catches up is closed
      if (this.replaying.length >= MAX_BUFFERED_EVENTS) {
        this.dropSlow();
        return false;
      }
      this.replaying.push(ev);
      return true;
    }
    return this.deliver(ev);
  }

  close(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.cache.removeWatcher(this);
    this.s.track?.close(this);
    sweeperFor(this.s).remove(this);
    if (reason && !this.sink.closed) console.warn(`svc-apiserver: closing watch of ${this.t.rt.plural}: ${reason}`);
    if (this.sink.closed) return;
    this.flushHeld();
    this.sink.end();
  }

  private bookmark(initialEventsEnd = false): void {
    const rev = Math.max(this.cache.watchersRevision, this.lastRevision);
    this.write(bookmarkFrame(this.t.rt, this.t.form, rev, initialEventsEnd));
  }

  private startHeaders(): void {
    this.sink.openStream(this.t.contentType);
  }

  /** Sends an ERROR event carrying `err`'s Status and ends the stream (upstream's error watcher). */
  failWith(err: StatusError): void {
    if (!this.sink.started) this.startHeaders();
    this.write(errorFrame(this.t.form, err.status));
    this.close('');
  }

  private armTimers(): void {
    // timeoutSeconds unset or 0: a random timeout in [min, 2*min), as upstream spreads reconnects
    const timeoutMs = this.o.timeoutSeconds
      ? this.o.timeoutSeconds * 1000
      : randomInt(this.s.minRequestTimeoutSeconds * 1000, 2 * this.s.minRequestTimeoutSeconds * 1000 + 1);
    this.timers.push(
      setTimeout(() => {
        if (this.o.allowWatchBookmarks) this.bookmark();
        this.close('');
      }, timeoutMs),
    );
    if (this.o.allowWatchBookmarks && this.s.bookmarkIntervalMs > 0) {
      const tick = (): void => {
        if (this.closed) return;
        if (!this.replaying) this.bookmark();
        this.timers.push(setTimeout(tick, this.s.bookmarkIntervalMs));
      };
      this.timers.push(setTimeout(tick, this.s.bookmarkIntervalMs));
    }
  }

  /** Runs the watch until it ends; errors before the stream starts are thrown (plain HTTP errors). */
  async start(): Promise<void> {
    validateWatchOptions(this.o, this.s.watchList);
    const rv = this.o.resourceVersion;
    const initial = this.o.sendInitialEvents === true || (this.o.sendInitialEvents === undefined && (rv === '' || rv === '0'));
    this.s.track?.open(this);
    sweeperFor(this.s).add(this);
    try {
      if (initial) await this.startWithState(rv);
      else await this.startFrom(rv === '' ? await this.s.cacher.syncConsistent() : Number(rv));
    } catch (err) {
      const e = toStatusError(err);
      if (this.sink.started) this.failWith(e);
      else if (e.code === 504 || e.code === 410) this.failWith(e);
      else {
        this.close('');
        throw e;
      }
    }
  }

  private async startWithState(rv: string): Promise<void> {
    if (rv === '') await this.s.cacher.syncConsistent();
    else if (rv !== '0') await this.s.cacher.waitFor(Number(rv));
    // Snapshot and registration happen in one synchronous step: no event can fall between them.
    const snapshot: CachedObject[] = [];
    for (const obj of this.cache.range(collectionPrefix(this.t.rt, this.t.namespace))) if (this.filter(obj)) snapshot.push(obj);
    const synced = this.cache.revision;
    this.replaying = [];
    this.cache.addWatcher(this);
    this.startHeaders();
    // Initial events honour backpressure (a large state is not a slow client); live events wait.
    await prepareViews(this.t.rt, snapshot);
    for (const obj of snapshot) {
      if (obj.unreadable) return this.failWith(unreadableError(obj));
      if (!(await this.writePaced(addedFrame(this.t.rt, this.t.form, obj)))) return;
    }
    this.lastRevision = synced;
    if (this.o.sendInitialEvents === true && this.o.allowWatchBookmarks) this.write(bookmarkFrame(this.t.rt, this.t.form, synced, true));
    const buffered = this.replaying;
    this.replaying = undefined;
    for (const ev of buffered) if (!this.deliver(ev)) return;
    this.armTimers();
  }

  /** Writes a frame, waiting for the socket to drain when its buffer is full. */
  private async writePaced(frame: Uint8Array): Promise<boolean> {
    if (this.closed) return false;
    this.meter?.sent(frame.byteLength);
    if (!this.sink.write(frame) && !(await this.sink.drained())) return false;
    return !this.closed;
  }

  private async startFrom(after: number): Promise<void> {
    await this.s.cacher.waitFor(after);
    // the history window is the store's: below its compaction a resumption is expired even if the ring still has it
    const compacted = await this.s.store.compactedRevision();
    if (after < compacted) throw errors.expired(`too old resource version: ${after} (${compacted})`);
    const fromRing = this.cache.eventsAfter(after);
    this.lastRevision = after;
    if (fromRing) {
      this.startHeaders();
      for (const ev of fromRing) if (!this.deliver(ev)) return;
      this.cache.addWatcher(this);
      this.armTimers();
      return;
    }
    // The ring no longer reaches back: replay the store's history, buffering live events meanwhile.
    this.replaying = [];
    this.cache.addWatcher(this);
    const upTo = this.cache.revision;
    let history: StoreEvent[];
    try {
      history = await this.s.store.eventsSince(after, resourcePrefix(this.t.rt));
    } catch (err) {
      this.cache.removeWatcher(this);
      this.replaying = undefined;
      if (err instanceof StoreError && err.code === 'Compacted') throw errors.expired(`too old resource version: ${after} (${err.revision})`);
      throw err;
    }
    this.startHeaders();
    for (const sev of history) {
      if (sev.revision > upTo) break;
      const cev = cacheEventOf(this.t.rt, sev);
      if (cev && !(await this.deliverPaced(cev))) return;
    }
    const buffered = this.replaying;
    this.replaying = undefined;
    for (const ev of buffered) if (!this.deliver(ev)) return;
    this.armTimers();
  }
}

/** A store history event in the cache's terms (objects described, deletion re-stamped). */
function cacheEventOf(rt: ResourceType, ev: StoreEvent): CacheEvent | undefined {
  const prev: CachedObject | undefined = ev.prevValue ? describeStored(rt, ev.key, ev.prevValue, ev.prevRevision) : undefined;
  if (ev.type === 'delete' && !prev) return undefined;
  if (ev.type === 'delete') return { type: 'DELETED', revision: ev.revision, object: restamp(prev!, ev.revision), prev };
  const object = describeStored(rt, ev.key, ev.value!, ev.revision);
  return { type: prev ? 'MODIFIED' : 'ADDED', revision: ev.revision, object, prev };
}

export function watchFilter(t: WatchTarget, o: ListOptions): ObjectFilter {
  const sel = selectionFilter({ namespace: t.namespace, labels: o.labelSelector, fields: o.fieldSelector });
  if (!t.name) return sel;
  return (obj) => obj.name === t.name && sel(obj);
}
