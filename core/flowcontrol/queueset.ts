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

export type RejectReason = 'queue-full' | 'concurrency-limit' | 'time-out' | 'cancelled';

/** upstream's estimated service time of a request (fair queuing's unit of work): 3 ms. */
const ESTIMATED_SERVICE_S = 0.003;

/** Deals a hand of distinct queue indexes from a flow's 64-bit hash (shuffle sharding). */
export class Dealer {
  constructor(
    readonly deckSize: number,
    readonly handSize: number,
  ) {}

  deal(hash: bigint): number[] {
    const remaining = Array.from({ length: this.deckSize }, (_, i) => i);
    const hand: number[] = [];
    let h = hash;
    for (let i = 0; i < this.handSize; i++) {
      const n = BigInt(remaining.length);
      const pick = Number(h % n);
      h /= n;
      hand.push(remaining[pick]!);
      remaining.splice(pick, 1);
    }
    return hand;
  }
}

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;

/** FNV-1a, 64 bits, of a flow's identity (schema and distinguisher). */
export function flowHash(key: string): bigint {
  let h = FNV_OFFSET;
  for (let i = 0; i < key.length; i++) {
    h ^= BigInt(key.charCodeAt(i));
    h = (h * FNV_PRIME) & MASK64;
  }
  return h;
}

export class Queue {
  readonly waiting: Waiter[] = [];
  waitingSeats = 0;
  executing = 0;
  seatsInUse = 0;
  /** Virtual time at which the queue's next request would finish being served. */
  nextDispatchR = 0;
  active = false;
  constructor(readonly index: number) {}
}

export interface Waiter {
  readonly seats: number;
  readonly work: WorkEstimate;
  readonly queue: Queue;
  readonly enqueuedAt: number;
  readonly flowKey: string;
  timer: NodeJS.Timeout | undefined;
  resolve(r: Execution | RejectReason): void;
}

/** A request running in a level: finish() gives its seats back (once). */
export class Execution {
  private done = false;
  constructor(
    private readonly qs: QueueSet,
    readonly queue: Queue | undefined,
    readonly work: WorkEstimate,
    /** Seats held while it runs: the larger of its initial and final seats. */
    readonly seats: number,
    readonly startedAt: number,
    /** How long it waited in a queue (ms). */
    readonly waitedMs: number,
  ) {}

  finish(): void {
    if (this.done) return;
    this.done = true;
    this.qs.finish(this);
  }
}

/** A request waiting in a queue: `result` settles when it runs or is refused; cancel() when its client left. */
export class Pending {
  constructor(
    readonly result: Promise<Execution | RejectReason>,
    readonly cancel: () => void,
    readonly waiter: Waiter,
  ) {}
}

export class QueueSet {
  /** The current concurrency limit in seats (set by the level's controller as seats are lent and borrowed). */
  limit = 0;
  seatsInUse = 0;
  executing = 0;
  waitingCount = 0;
  waitingSeats = 0;
  /** Peak seats in use plus seats waiting since the last read (the level's demand). */
  private demandPeak = 0;
  currentR = 0;
  private lastAdvance: number;
  private activeQueues = 0;
  private queues: Queue[] = [];
  private readonly nonEmpty = new Set<Queue>();
  private dealer: Dealer | undefined;
  private readonly hands = new Map<string, number[]>();

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

  /** A new queuing configuration (queues kept where they still exist; waiters of removed queues are refused). */
  configure(config: QueuingConfig | undefined): void {
    this.config = config;
    this.hands.clear();
    const n = config?.queues ?? 0;
    if (this.queues.length > n) {
      for (const q of this.queues.slice(n)) for (const w of [...q.waiting]) this.reject(w, 'concurrency-limit');
      this.queues.length = n;
    }
    while (this.queues.length < n) this.queues.push(new Queue(this.queues.length));
    this.dealer = config ? new Dealer(config.queues, Math.min(config.handSize, config.queues)) : undefined;
    this.dispatch();
  }

  /** The queues (for the debug dumps). */
  get allQueues(): readonly Queue[] {
    return this.queues;
  }

  /** Peak demand (seats in use plus waiting) since the last call. */
  takeDemandPeak(): number {
    const p = Math.max(this.demandPeak, this.seatsInUse + this.waitingSeats);
    this.demandPeak = this.seatsInUse + this.waitingSeats;
    return p;
  }

  private noteDemand(): void {
    const d = this.seatsInUse + this.waitingSeats;
    if (d > this.demandPeak) this.demandPeak = d;
  }

  /** upstream's canAccommodateSeatsLocked: a request wider than the limit runs alone. */
  private canAccommodate(seats: number): boolean {
    if (this.exempt) return true;
    if (seats > this.limit) return this.executing === 0;
    return this.seatsInUse + seats <= this.limit;
  }

  private advance(): void {
    const t = this.now();
    if (this.activeQueues > 0) {
      const rate = Math.min(this.seatsInUse + this.waitingSeats, Math.max(this.limit, 1)) / this.activeQueues;
      this.currentR += ((t - this.lastAdvance) / 1000) * rate;
    }
    this.lastAdvance = t;
  }

  private setActive(q: Queue): void {
    const active = q.waiting.length > 0 || q.executing > 0;
    if (active === q.active) return;
    q.active = active;
    this.activeQueues += active ? 1 : -1;
  }

  /** The shortest queue (seats waiting and running) of the flow's hand. */
  private queueFor(flowKey: string): Queue {
    let hand = this.hands.get(flowKey);
    if (!hand) {
      if (this.hands.size > 10_000) this.hands.clear();
      hand = this.dealer!.deal(flowHash(flowKey));
      this.hands.set(flowKey, hand);
    }
    let best = this.queues[hand[0]!]!;
    let bestSum = best.waitingSeats + best.seatsInUse;
    for (let i = 1; i < hand.length; i++) {
      const q = this.queues[hand[i]!]!;
      const sum = q.waitingSeats + q.seatsInUse;
      if (sum < bestSum) {
        best = q;
        bestSum = sum;
      }
    }
    return best;
  }

  private begin(queue: Queue | undefined, work: WorkEstimate, waitedMs: number): Execution {
    const seats = Math.max(work.initialSeats, work.finalSeats);
    this.seatsInUse += seats;
    this.executing++;
    if (queue) {
      queue.executing++;
      queue.seatsInUse += seats;
      queue.nextDispatchR = Math.max(queue.nextDispatchR, this.currentR) + work.initialSeats * ESTIMATED_SERVICE_S + (work.finalSeats * work.additionalLatencyMs) / 1000;
      this.setActive(queue);
    }
    this.noteDemand();
    return new Execution(this, queue, work, seats, this.now(), waitedMs);
  }

  /**
   * Admits a request: an Execution when it runs now, a Pending when it waits in a queue, or the reason
   * it is refused.
   */
  start(flowKey: string, work: WorkEstimate): Execution | Pending | RejectReason {
    if (this.exempt) return this.begin(undefined, work, 0);
    this.advance();
    const seats = Math.max(work.initialSeats, work.finalSeats);
    if (!this.config) return this.canAccommodate(seats) ? this.begin(undefined, work, 0) : 'concurrency-limit';
    const queue = this.queueFor(flowKey);
    if (this.waitingCount === 0 && this.canAccommodate(seats)) return this.begin(queue, work, 0);
    if (queue.waiting.length >= this.config.queueLengthLimit) return 'queue-full';
    let resolve!: (r: Execution | RejectReason) => void;
    const result = new Promise<Execution | RejectReason>((r) => (resolve = r));
    const w: Waiter = { seats, work, queue, enqueuedAt: this.now(), flowKey, timer: undefined, resolve };
    if (!queue.active) queue.nextDispatchR = Math.max(queue.nextDispatchR, this.currentR);
    queue.waiting.push(w);
    queue.waitingSeats += seats;
    this.waitingCount++;
    this.waitingSeats += seats;
    this.nonEmpty.add(queue);
    this.setActive(queue);
    this.noteDemand();
    w.timer = setTimeout(() => this.reject(w, 'time-out'), this.waitLimitMs);
    this.dispatch();
    return new Pending(result, () => this.reject(w, 'cancelled'), w);
  }

  /** Takes a waiter out of its queue. */
  private remove(w: Waiter): boolean {
    const q = w.queue;
    const i = q.waiting.indexOf(w);
    if (i < 0) return false;
    q.waiting.splice(i, 1);
    q.waitingSeats -= w.seats;
    this.waitingCount--;
    this.waitingSeats -= w.seats;
    if (!q.waiting.length) this.nonEmpty.delete(q);
    if (w.timer) clearTimeout(w.timer);
    this.setActive(q);
    return true;
  }

  private reject(w: Waiter, reason: RejectReason): void {
    this.advance();
    if (!this.remove(w)) return;
    w.resolve(reason);
    // a wide request leaving may let narrower ones behind it run
    this.dispatch();
  }

  /** Runs waiting requests while their seats are free, the queue with the earliest virtual finish first. */
  private dispatch(): void {
    while (this.waitingCount > 0) {
      let best: Queue | undefined;
      for (const q of this.nonEmpty) if (!best || q.nextDispatchR < best.nextDispatchR) best = q;
      const w = best!.waiting[0]!;
      // the chosen request waits for its seats; nothing overtakes it (it would starve otherwise)
      if (!this.canAccommodate(w.seats)) return;
      this.remove(w);
      w.resolve(this.begin(best, w.work, this.now() - w.enqueuedAt));
    }
  }

  /** An execution ended: its seats come back, the final seats after the additional latency. */
  finish(e: Execution): void {
    this.advance();
    const q = e.queue;
    const { finalSeats, additionalLatencyMs } = e.work;
    const late = additionalLatencyMs > 0 && finalSeats > 0 ? Math.min(finalSeats, e.seats) : 0;
    this.executing--;
    this.seatsInUse -= e.seats - late;
    if (q) {
      q.executing--;
      q.seatsInUse -= e.seats - late;
      // fair queuing charged the estimate; the queue is charged what the request really took
      const actualS = (this.now() - e.startedAt) / 1000;
      q.nextDispatchR += (actualS - ESTIMATED_SERVICE_S) * e.work.initialSeats;
      this.setActive(q);
    }
    if (late) {
      const t = setTimeout(() => {
        this.seatsInUse -= late;
        if (q) q.seatsInUse -= late;
        this.dispatch();
      }, additionalLatencyMs);
      t.unref?.();
    }
    this.dispatch();
  }
}
