/**
 * The fair queuing of one priority level (upstream's queueset): a request takes seats (its work
 * estimate) out of the level's current concurrency limit. When they are not free it waits in one of
 * the level's queues, chosen by shuffle sharding its flow onto a hand of queues and taking the shortest
 * of the hand, so a flow that floods fills its own hand of queues and rarely another flow's. Queues are
 * served in the order of their virtual finish times (fair queuing over seat-seconds: each dispatch
 * advances its queue by the seats it takes times the estimated service time; the virtual clock R
 * advances at the rate the active queues share the seats). A request waits at most the wait limit
 * (then `time-out`); a full queue refuses at once (`queue-full`); a level without queues (limitResponse
 * Reject) refuses what it cannot run now (`concurrency-limit`). An exempt level only counts.
 */
import { createHash } from 'node:crypto';

/** Seats and how long the request's final phase keeps seats after it finished (upstream's WorkEstimate). */
export interface WorkEstimate {
  initialSeats: number;
  finalSeats: number;
  additionalLatencyMs: number;
}

export interface QueuingConfig {
  queues: number;
  handSize: number;
  queueLengthLimit: number;
}

/** What the debug dump of requests shows of one (set by the request path; absent in unit tests). */
export interface RequestDetail {
  flowSchema: string;
  distinguisher: string;
  user: string;
  info: { verb: string; path: string; namespace: string; name: string; apiGroup: string; apiVersion: string; resource: string; subresource: string };
}

/** A time of performance.now() as milliseconds since the epoch (the dumps' times). */
export const epochOf = (t: number): number => performance.timeOrigin + t;

export type RejectReason = 'queue-full' | 'concurrency-limit' | 'time-out' | 'cancelled';

/** upstream's estimated service time of a request (fair queuing's unit of work): 3 ms. */
export const ESTIMATED_SERVICE_S = 0.003;

/**
 * Where R is wound back (upstream's epoch advance): its seat-seconds are 64-bit fixed point with 1e-8
 * resolution, so R is moved back by half that range once it passes three quarters of it.
 */
const MAX_SEAT_SECONDS = 18446744073709551615 / 1e8;
const R_DECREMENT = MAX_SEAT_SECONDS / 2;
const HIGH_R = R_DECREMENT + R_DECREMENT / 2;

/** The work fair queuing charges a request: its initial seats for the estimated service time plus its final seats' work. */
export const totalWork = (w: WorkEstimate): number => w.initialSeats * ESTIMATED_SERVICE_S + (w.finalSeats * w.additionalLatencyMs) / 1000;

/** What a level's metrics see of its queues (upstream's gauges and integrator fed by the queueset). */
export interface QueueSetObserver {
  /** After every change of the requests or seats waiting and executing, at `t` (performance.now()). */
  changed(qs: QueueSet, t: number): void;
  /** A request was dispatched from a queue: R now, its queue's virtual start, and the bounds over queues with waiters. */
  dispatched(r: number, s: number, sMin: number, sMax: number, dsMin: number, dsMax: number): void;
  /** The request chosen next did not fit in the seats free. */
  noAccommodation(flowSchema: string): void;
  /** R was wound back; success is false when some value went the wrong way. */
  epochAdvanced(success: boolean): void;
}

/**
 * Deals a hand of distinct queue indexes from a flow's 64-bit hash (upstream's shufflesharding.Dealer):
 * the hash's successive remainders by deckSize, deckSize-1, ... each pick a card among those left.
 */
export class Dealer {
  constructor(
    readonly deckSize: number,
    readonly handSize: number,
  ) {}

  deal(hash: bigint): number[] {
    const remainders: number[] = [];
    let h = hash;
    for (let i = 0; i < this.handSize; i++) {
      const n = BigInt(this.deckSize - i);
      remainders.push(Number(h % n));
      h /= n;
    }
    return remainders.map((r, i) => {
      let card = r;
      for (let j = i; j > 0; j--) if (card >= remainders[j - 1]!) card++;
      return card;
    });
  }
}

/**
 * A flow's hash (upstream's hashFlowID): the first 8 bytes, little-endian, of the SHA-256 of the
 * FlowSchema's name, a zero byte and the distinguisher - the flow key's own bytes.
 */
export function flowHash(key: string): bigint {
  return createHash('sha256').update(key).digest().readBigUInt64LE(0);
}

export class Queue {
  readonly waiting: Waiter[] = [];
  waitingSeats = 0;
  /** Sum of the waiting requests' work (seat-seconds): shuffle sharding picks the queue with the least. */
  waitingWork = 0;
  executing = 0;
  seatsInUse = 0;
  /** The requests it dispatched that are running (the dump of requests lists them). */
  readonly running = new Set<Execution>();
  /** Virtual time at which the queue's next request starts being served (upstream's nextDispatchR). */
  nextDispatchR = 0;
  active = false;
  constructor(public index: number) {}
}

export interface Waiter {
  readonly seats: number;
  work: WorkEstimate;
  readonly queue: Queue;
  readonly enqueuedAt: number;
  /** R when it arrived: its queue's next dispatch is never before it. */
  arrivalR: number;
  readonly flowKey: string;
  readonly flowSchema: string;
  /** When it arrived (performance.now()). */
  readonly arrivedAt: number;
  readonly detail: RequestDetail | undefined;
  timer: NodeJS.Timeout | undefined;
  /** Set when it was dispatched within the call that queued it. */
  ran?: Execution;
  resolve(r: Execution | RejectReason): void;
}

/** Told when an execution's seats come back (after its additional latency, if any). */
export interface SeatHolder {
  released(e: Execution): void;
}

/** A request running in a level: finish() gives its seats back (once). */
export class Execution {
  private done = false;
  /** Told when its seats come back (a method, not a closure: one less allocation a request). */
  holder: SeatHolder | undefined;
  constructor(
    private readonly qs: QueueSet,
    readonly queue: Queue | undefined,
    readonly work: WorkEstimate,
    /** Seats held while it runs and through its additional latency: the larger of its initial and final seats. */
    readonly seats: number,
    readonly startedAt: number,
    /** How long it waited in a queue (ms). */
    readonly waitedMs: number,
    /** When it arrived (performance.now()). */
    readonly arrivedAt: number,
    readonly detail: RequestDetail | undefined,
  ) {}

  /** `t`: performance.now() when the caller has it already. */
  finish(t?: number): void {
    if (this.done) return;
    this.done = true;
    this.qs.finish(this, t);
  }
}

/** A request waiting in a queue: `result` settles when it runs or is refused; cancel() when its client left. */
export class Pending {
  constructor(
    readonly result: Promise<Execution | RejectReason>,
    readonly cancel: () => void,
    /** Shortens its wait to `ms` from now when that is less than the level's limit (its own deadline). */
    readonly waitAtMost: (ms: number) => void,
  ) {}
}

const NO_OBSERVER: QueueSetObserver = { changed() {}, dispatched() {}, noAccommodation() {}, epochAdvanced() {} };

export class QueueSet {
  /** The current concurrency limit in seats (set by the level's controller as seats are lent and borrowed). */
  limit = 0;
  seatsInUse = 0;
  executing = 0;
  waitingCount = 0;
  waitingSeats = 0;
  currentR = 0;
  /** Length of the chosen queue after the last start() enqueued (upstream's request_queue_length_after_enqueue). */
  lastQueueLength: number | undefined;
  observer: QueueSetObserver = NO_OBSERVER;
  private lastAdvance: number;
  private activeQueues = 0;
  private queues: Queue[] = [];
  private dealer: Dealer | undefined;
  private readonly hands = new Map<string, number[]>();
  /** Running requests that came through no queue (an exempt level's, a level without queues). */
  readonly runningQueueless = new Set<Execution>();
  /** Requests enqueued so far: where a hand's scan for the shortest queue starts (upstream's enqueues). */
  private enqueues = 0;
  /** The queue last dispatched from: the next scan starts after it (upstream's robinIndex). */
  private robinIndex = -1;

  constructor(
    readonly name: string,
    /** undefined: the level rejects (no queues). */
    private config: QueuingConfig | undefined,
    /** An exempt level never refuses or queues. */
    readonly exempt: boolean,
    /** Longest a request waits in a queue (ms). */
    public waitLimitMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.lastAdvance = now();
    this.configure(config);
  }

  get queuing(): QueuingConfig | undefined {
    return this.config;
  }

  /** Nothing waits and nothing runs. */
  get idle(): boolean {
    return this.waitingCount === 0 && this.executing === 0;
  }

  /**
   * A new queuing configuration. Queues beyond the new number are kept while they hold requests and
   * dropped as they empty, as upstream does.
   */
  configure(config: QueuingConfig | undefined): void {
    this.config = config;
    this.hands.clear();
    const n = config?.queues ?? 0;
    while (this.queues.length < n) this.queues.push(new Queue(this.queues.length));
    this.dropEmptyQueues();
    this.dealer = config ? new Dealer(config.queues, Math.min(config.handSize, config.queues)) : undefined;
    this.dispatch();
  }

  private dropEmptyQueues(): void {
    const n = this.config?.queues ?? 0;
    if (this.queues.length <= n) return;
    const keep = this.queues.filter((q, i) => i < n || q.waiting.length > 0 || q.executing > 0 || q.seatsInUse > 0);
    if (keep.length === this.queues.length) return;
    keep.forEach((q, i) => (q.index = i));
    this.queues = keep;
    if (this.robinIndex >= keep.length) this.robinIndex = keep.length - 1;
  }

  /** The queues (for the debug dumps). */
  get allQueues(): readonly Queue[] {
    return this.queues;
  }

  /** upstream's canAccommodateSeatsLocked: a request wider than the limit runs alone. */
  private canAccommodate(seats: number): boolean {
    if (this.exempt) return true;
    if (seats > this.limit) return this.executing === 0;
    return this.seatsInUse + seats <= this.limit;
  }

  /** Moves R on to `t`: the seats requested (at most the limit) shared by the active queues. */
  private advance(t = this.now()): void {
    if (this.activeQueues > 0) {
      const rate = Math.min(this.seatsInUse + this.waitingSeats, this.limit) / this.activeQueues;
      this.currentR += ((t - this.lastAdvance) / 1000) * rate;
      if (this.currentR >= HIGH_R) this.advanceEpoch();
    }
    this.lastAdvance = t;
  }

  private advanceEpoch(): void {
    this.currentR -= R_DECREMENT;
    let success = true;
    for (const q of this.queues) {
      if (!q.waiting.length && !q.executing) {
        q.nextDispatchR = 0;
        continue;
      }
      const before = q.nextDispatchR;
      q.nextDispatchR -= R_DECREMENT;
      if (q.nextDispatchR > before) success = false;
      for (const w of q.waiting) {
        const was = w.arrivalR;
        w.arrivalR -= R_DECREMENT;
        if (w.arrivalR > was) success = false;
      }
    }
    this.observer.epochAdvanced(success);
  }

  private setActive(q: Queue): void {
    const active = q.waiting.length > 0 || q.executing > 0;
    if (active === q.active) return;
    q.active = active;
    this.activeQueues += active ? 1 : -1;
  }

  /** The queue of the flow's hand with the least work waiting, the scan starting at a rotating offset. */
  private queueFor(flowKey: string): Queue {
    let hand = this.hands.get(flowKey);
    if (!hand) {
      if (this.hands.size > 10_000) this.hands.clear();
      hand = this.dealer!.deal(flowHash(flowKey));
      this.hands.set(flowKey, hand);
    }
    const offset = this.enqueues % hand.length;
    this.enqueues++;
    let best: Queue | undefined;
    for (let i = 0; i < hand.length; i++) {
      const q = this.queues[hand[(offset + i) % hand.length]!]!;
      if (!best || q.waitingWork < best.waitingWork) best = q;
    }
    return best!;
  }

  private begin(queue: Queue | undefined, work: WorkEstimate, waitedMs: number, arrivedAt: number, detail: RequestDetail | undefined, t: number): Execution {
    const seats = Math.max(work.initialSeats, work.finalSeats);
    this.seatsInUse += seats;
    this.executing++;
    const e = new Execution(this, queue, work, seats, t, waitedMs, arrivedAt, detail);
    if (queue) {
      queue.executing++;
      queue.seatsInUse += seats;
      queue.nextDispatchR += totalWork(work);
      queue.running.add(e);
      this.setActive(queue);
    } else this.runningQueueless.add(e);
    this.observer.changed(this, t);
    return e;
  }

  /**
   * Admits a request: an Execution when it runs now, a Pending when it waits in a queue (at most the
   * level's wait limit, or less: Pending.waitAtMost), or the reason it is refused. `flowSchema` names
   * it in the metrics of refused dispatches; `t` is performance.now() when the caller has it already
   * (one clock read a request: each costs about 50 ns here).
   */
  start(flowKey: string, work: WorkEstimate, flowSchema = '', detail?: RequestDetail, t = this.now()): Execution | Pending | RejectReason {
    this.lastQueueLength = undefined;
    const arrivedAt = t;
    if (this.exempt) return this.begin(undefined, work, 0, arrivedAt, detail, t);
    this.advance(t);
    const seats = Math.max(work.initialSeats, work.finalSeats);
    if (!this.config) return this.canAccommodate(seats) ? this.begin(undefined, work, 0, arrivedAt, detail, t) : 'concurrency-limit';
    const queue = this.queueFor(flowKey);
    // a full queue refuses only while the level's seats are all taken
    if (this.seatsInUse >= this.limit && queue.waiting.length >= this.config.queueLengthLimit) return 'queue-full';
    if (this.waitingCount === 0 && this.seatsInUse < this.limit && this.canAccommodate(seats)) {
      // nothing waits and the seats are free: what enqueueing and dispatching would do, without the wait
      if (!queue.waiting.length && !queue.executing) queue.nextDispatchR = this.currentR;
      if (queue.nextDispatchR < this.currentR) queue.nextDispatchR = this.currentR;
      this.lastQueueLength = 1;
      const s = queue.nextDispatchR;
      const ds = s - queue.seatsInUse * ESTIMATED_SERVICE_S;
      this.observer.dispatched(this.currentR, s, s, s, ds, ds);
      this.robinIndex = queue.index;
      return this.begin(queue, work, 0, arrivedAt, detail, t);
    }
    let resolve!: (r: Execution | RejectReason) => void;
    const result = new Promise<Execution | RejectReason>((r) => (resolve = r));
    const w: Waiter = { seats, work, queue, enqueuedAt: t, arrivalR: this.currentR, flowKey, flowSchema, arrivedAt, detail, timer: undefined, resolve };
    w.resolve = (r) => {
      if (r instanceof Execution) w.ran = r;
      resolve(r);
    };
    if (!queue.waiting.length && !queue.executing) queue.nextDispatchR = this.currentR;
    queue.waiting.push(w);
    queue.waitingSeats += seats;
    queue.waitingWork += totalWork(work);
    this.waitingCount++;
    this.waitingSeats += seats;
    this.setActive(queue);
    this.boundNextDispatch(queue);
    this.lastQueueLength = queue.waiting.length;
    this.observer.changed(this, t);
    this.dispatch(t);
    if (w.ran) return w.ran;
    w.timer = setTimeout(() => this.reject(w, 'time-out'), this.waitLimitMs);
    return new Pending(result, () => this.reject(w, 'cancelled'), (ms) => {
      if (ms >= this.waitLimitMs || !w.timer) return;
      clearTimeout(w.timer);
      w.timer = setTimeout(() => this.reject(w, 'time-out'), Math.max(0, ms));
    });
  }

  /** A queue's next dispatch is never before the arrival of its oldest waiting request. */
  private boundNextDispatch(q: Queue): void {
    const oldest = q.waiting[0];
    if (oldest && q.nextDispatchR < oldest.arrivalR) q.nextDispatchR = oldest.arrivalR;
  }

  /** Takes a waiter out of its queue. */
  private remove(w: Waiter): boolean {
    const q = w.queue;
    const i = q.waiting.indexOf(w);
    if (i < 0) return false;
    q.waiting.splice(i, 1);
    q.waitingSeats -= w.seats;
    q.waitingWork -= totalWork(w.work);
    if (!q.waiting.length) q.waitingWork = 0;
    this.waitingCount--;
    this.waitingSeats -= w.seats;
    if (w.timer) clearTimeout(w.timer);
    this.setActive(q);
    return true;
  }

  private reject(w: Waiter, reason: RejectReason): void {
    const t = this.now();
    this.advance(t);
    if (!this.remove(w)) return;
    this.boundNextDispatch(w.queue);
    this.observer.changed(this, t);
    w.resolve(reason);
    this.dropEmptyQueues();
    // a wide request leaving may let narrower ones behind it run
    this.dispatch(t);
  }

  /**
   * Runs waiting requests while seats are free: each time the oldest request of the queue whose virtual
   * finish (next dispatch plus that request's work) is earliest, scanning round-robin from the queue
   * after the last one served; when that request does not fit, nothing overtakes it.
   */
  private dispatch(t?: number): void {
    while (this.waitingCount > 0 && this.seatsInUse < this.limit) {
      let best: Queue | undefined;
      let bestFinish = Infinity;
      let sMin = Infinity;
      let sMax = -Infinity;
      let dsMin = Infinity;
      let dsMax = -Infinity;
      const n = this.queues.length;
      for (let k = 0; k < n; k++) {
        this.robinIndex = (this.robinIndex + 1) % n;
        const q = this.queues[this.robinIndex]!;
        const oldest = q.waiting[0];
        if (!oldest) continue;
        sMin = Math.min(sMin, q.nextDispatchR);
        sMax = Math.max(sMax, q.nextDispatchR);
        const discounted = q.nextDispatchR - q.seatsInUse * ESTIMATED_SERVICE_S;
        dsMin = Math.min(dsMin, discounted);
        dsMax = Math.max(dsMax, discounted);
        const finish = q.nextDispatchR + totalWork(oldest.work);
        if (finish < bestFinish) {
          bestFinish = finish;
          best = q;
        }
      }
      if (!best) return;
      const w = best.waiting[0]!;
      if (!this.canAccommodate(w.seats)) {
        this.observer.noAccommodation(w.flowSchema);
        return;
      }
      this.robinIndex = best.index;
      this.remove(w);
      // final seats beyond the whole limit are reshaped into the limit, the same work over a longer time
      if (w.work.finalSeats > this.limit && this.limit > 0) {
        const finalWork = w.work.finalSeats * w.work.additionalLatencyMs;
        w.work = { ...w.work, finalSeats: this.limit, additionalLatencyMs: finalWork / this.limit };
      }
      this.observer.dispatched(this.currentR, best.nextDispatchR, sMin, sMax, dsMin, dsMax);
      t ??= this.now();
      const e = this.begin(best, w.work, t - w.enqueuedAt, w.arrivedAt, w.detail, t);
      this.boundNextDispatch(best);
      w.resolve(e);
    }
  }

  /** An execution ended (at `t`, performance.now()): its seats come back, after its additional latency when it has one. */
  finish(e: Execution, t = this.now()): void {
    this.advance(t);
    const q = e.queue;
    this.executing--;
    this.runningQueueless.delete(e);
    if (q) {
      q.executing--;
      q.running.delete(e);
      // fair queuing charged the estimate; the queue is charged what the request really took
      const actualS = (t - e.startedAt) / 1000;
      q.nextDispatchR += (actualS - ESTIMATED_SERVICE_S) * e.work.initialSeats;
      this.boundNextDispatch(q);
      this.setActive(q);
    }
    const { additionalLatencyMs } = e.work;
    if (additionalLatencyMs > 0) {
      this.observer.changed(this, t);
      const timer = setTimeout(() => {
        const later = this.now();
        this.advance(later);
        this.releaseSeats(e, later);
      }, additionalLatencyMs);
      timer.unref?.();
      return;
    }
    this.releaseSeats(e, t);
  }

  private releaseSeats(e: Execution, t: number): void {
    this.seatsInUse -= e.seats;
    if (e.queue) e.queue.seatsInUse -= e.seats;
    e.holder?.released(e);
    this.observer.changed(this, t);
    this.dropEmptyQueues();
    this.dispatch(t);
  }
}
