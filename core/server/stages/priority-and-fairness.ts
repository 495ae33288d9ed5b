/**
 * Stage: API Priority and Fairness (upstream's WithPriorityAndFairness), in the place of the
 * in-flight limits when --enable-priority-and-fairness is on. Each request is classified (its
 * FlowSchema and priority level, named by UID in the X-Kubernetes-PF-FlowSchema-UID and
 * X-Kubernetes-PF-PriorityLevel-UID headers of every answer), its seats estimated, and it runs, waits
 * in its level's queues, or is answered 429 with Retry-After. A watch holds its seats only while its
 * initial events are sent (until its stream has opened and that turn of the event loop ends), as
 * upstream counts watches. Seats come back exactly once: when the handler settles or the client leaves.
 */
import { isPromise, type MaybePromise } from '../../api/maybe-async.js';
import { errors } from '../../api/status.js';
import type { Classification, FlowController, Level } from '../../flowcontrol/controller.js';
import type { FlowControlMetrics, FlowStats } from '../../flowcontrol/metrics.js';
import { Execution, Pending, type RejectReason } from '../../flowcontrol/queueset.js';
import type { RequestScope, ResponseSink } from '../../request/scope.js';
import type { Stage } from '../chain.js';
import type { InflightCounter } from './max-in-flight.js';

export const FLOW_SCHEMA_UID_HEADER = 'X-Kubernetes-PF-FlowSchema-UID';
export const PRIORITY_LEVEL_UID_HEADER = 'X-Kubernetes-PF-PriorityLevel-UID';

/** The verbs upstream counts as read-only (the rest are mutating) in read_vs_write_current_requests. */
const READ_ONLY_VERBS = new Set(['get', 'list', 'watch']);

/** upstream's message of a request refused for load. */
export const TOO_MANY_REQUESTS = 'Too many requests, please try again later.';

/** The longest Retry-After (upstream's maxRetryAfter). */
const MAX_RETRY_AFTER = 32;

/**
 * The Retry-After each level answers (upstream's dropped-requests tracker): it starts at 1 s; at the
 * first refusal of each new second it is reconsidered from the refusals of the previous `retryAfter`
 * seconds: doubled (up to 32) when there were at least 3 x retryAfter of them and the last doubling is
 * retryAfter seconds old, lowered by one when there were fewer than retryAfter.
 */
export class RetryAfter {
  private readonly byLevel = new Map<string, { retryAfter: number; raisedAt: number; current: number; count: number; history: { second: number; count: number }[] }>();
  constructor(private readonly now: () => number = () => Date.now()) {}

  /** Records a refusal at the level; returns the Retry-After to answer it with. */
  drop(level: string): number {
    const second = Math.floor(this.now() / 1000);
    let s = this.byLevel.get(level);
    if (!s) this.byLevel.set(level, (s = { retryAfter: 1, raisedAt: 0, current: 0, count: 0, history: [] }));
    if (s.current === second) s.count++;
    else {
      s.history.push({ second: s.current, count: s.count });
      const keep = Math.min(2 * s.retryAfter, MAX_RETRY_AFTER);
      while (s.history.length && second - s.history[0]!.second > keep) s.history.shift();
      s.current = second;
      s.count = 1;
      let dropped = 0;
      for (const h of s.history) if (second - h.second <= s.retryAfter && h.second < second) dropped += h.count;
      if (second - s.raisedAt >= s.retryAfter && dropped >= 3 * s.retryAfter) {
        s.retryAfter = Math.min(MAX_RETRY_AFTER, s.retryAfter * 2);
        s.raisedAt = second;
      } else if (dropped < s.retryAfter && s.retryAfter > 1) s.retryAfter--;
    }
    return s.retryAfter;
  }
}

/**
 * The watch's sink, told to say when its stream opens: its own openStream (this answer's sink only,
 * so every other call, each event's write included, goes straight to the sink as before).
 */
function onStreamOpened(sink: ResponseSink, opened: () => void): void {
  const open = sink.openStream;
  sink.openStream = function (this: ResponseSink, contentType: string): void {
    open.call(this, contentType);
    // the initial events are written in this turn: their seats come back after it
    setImmediate(opened);
  };
}

/** `fn` run at its first call only. */
function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}

/** `release` at the handler's end or the client's leaving, whichever comes first. */
function untilSettled(s: RequestScope, r: Promise<void>, release: () => void): Promise<void> {
  s.sink.onClose(release);
  return r.finally(release);
}

/** The longest any request waits in a queue (upstream's hard limit). */
const MAX_WAIT_MS = 60_000;

export function withPriorityAndFairness(
  fc: FlowController,
  metrics: FlowControlMetrics,
  retryAfter: RetryAfter,
  /** The server's count of requests executing, read-only and mutating (apiserver_current_inflight_requests). */
  inflight: { readonly readOnly: InflightCounter; readonly mutating: InflightCounter },
  /** A request without a deadline (a watch) waits at most this: a quarter of --request-timeout. */
  defaultWaitMs: number,
): Stage {
  /**
   * upstream's getRequestWaitContext: a quarter of the time the request was given (its deadline from its
   * arrival, or the default), at most a minute, counted from its arrival. Read only for a request that
   * waits.
   */
  const waitLimitMs = (s: RequestScope, now: number): number => {
    const sinceArrival = now - s.startedAt;
    const limit = s.deadline > 0 ? (s.deadline - (Date.now() - sinceArrival)) / 4 : defaultWaitMs;
    return Math.min(limit, MAX_WAIT_MS) - sinceArrival;
  };
  const rw = metrics.readWrite;
  const refuse = (c: Classification, stats: FlowStats, reason: RejectReason, waitedMs: number): never => {
    // upstream ends a wait whose client left as it ends one that ran out of time: reason time-out
    stats.rejected(reason === 'cancelled' ? 'time-out' : reason);
    stats.waitRejected.observe(waitedMs / 1000);
    c.level.rejected++;
    if (reason === 'time-out') c.level.timedOut++;
    if (reason === 'cancelled') c.level.cancelled++;
    throw errors.tooManyRequests(TOO_MANY_REQUESTS, retryAfter.drop(c.level.name));
  };

  /** The request ended (or its watch's stream opened): its counts go down and its seats back, one clock read. */
  const end = (stats: FlowStats, e: Execution, readOnly: boolean, watch: boolean): void => {
    const t = performance.now();
    stats.executing--;
    (readOnly ? rw.executingReadOnly : rw.executingMutating).add(-1, t);
    (readOnly ? inflight.readOnly : inflight.mutating).current--;
    (watch ? stats.watchExecution : stats.execution).observe((t - e.startedAt) / 1000);
    e.finish(t);
  };

  const run = (s: RequestScope, next: (s: RequestScope) => MaybePromise<void>, level: Level, stats: FlowStats, e: Execution): MaybePromise<void> => {
    stats.dispatched.inc();
    // upstream times the waits of the levels that limit; an exempt request never waits
    if (!level.exempt) stats.waitExecuted.observe(e.waitedMs / 1000);
    level.dispatched++;
    stats.executing++;
    stats.executingSeats += e.seats;
    // the seats stay taken through a write's additional latency, after the request itself
    e.holder = stats;
    const verb = s.info.verb;
    const watch = verb === 'watch';
    const readOnly = watch || verb === 'get' || verb === 'list';
    (readOnly ? rw.executingReadOnly : rw.executingMutating).add(1, e.startedAt);
    (readOnly ? inflight.readOnly : inflight.mutating).acquire();
    // a watch's seats come back once its stream has opened (or it failed, or its client left); other
    // requests' when they end, with no closure made for those that end in this call
    const release = watch ? once(() => end(stats, e, readOnly, true)) : undefined;
    if (release) onStreamOpened(s.sink, release);
    let r;
    try {
      r = next(s);
    } catch (err) {
      if (release) release();
      else end(stats, e, readOnly, false);
      throw err;
    }
    if (isPromise(r)) return untilSettled(s, r, release ?? once(() => end(stats, e, readOnly, false)));
    if (release) release();
    else end(stats, e, readOnly, false);
    return r;
  };

  return (next) => (s: RequestScope) => {
    const t = performance.now();
    const c = fc.classify(s.user, s.info);
    const level = c.level;
    s.sink.addHeader?.(FLOW_SCHEMA_UID_HEADER, c.schema.uid);
    s.sink.addHeader?.(PRIORITY_LEVEL_UID_HEADER, level.uid);
    const stats = metrics.ofSchema(c.schema);
    const work = fc.estimate(s.info, s.query, level);
    const seats = Math.max(work.initialSeats, work.finalSeats);
    stats.seats.observe(seats);
    if (work.watchCount !== undefined) stats.watchCount.observe(work.watchCount);
    // the classification doubles as what the debug dump of requests shows
    const admitted = level.qs.start(c.flowKey, work, c.schema.name, c, t);
    // every request that went through a queue, run at once or not, saw its queue's length
    if (level.qs.lastQueueLength !== undefined) stats.queueLength.observe(level.qs.lastQueueLength);
    if (admitted instanceof Execution) return run(s, next, level, stats, admitted);
    if (!(admitted instanceof Pending)) return refuse(c, stats, admitted, 0);
    // waiting in a queue, at most what is left of a quarter of its time
    admitted.waitAtMost(waitLimitMs(s, t));
    const arrived = t;
    stats.inqueue++;
    stats.inqueueSeats += seats;
    const waitingReadOnly = READ_ONLY_VERBS.has(s.info.verb);
    const waitingKind = waitingReadOnly ? rw.waitingReadOnly : rw.waitingMutating;
    const inqueue = waitingReadOnly ? metrics.inqueue.readOnly : metrics.inqueue.mutating;
    waitingKind.add(1, t);
    inqueue.acquire();
    s.sink.onClose(admitted.cancel);
    return admitted.result.then((e) => {
      stats.inqueue--;
      stats.inqueueSeats -= seats;
      waitingKind.add(-1);
      inqueue.current--;
      if (!(e instanceof Execution)) return refuse(c, stats, e, performance.now() - arrived);
      // the client may have left while its request waited: its seats go back at once
      if (s.sink.closed) {
        e.finish();
        return undefined;
      }
      return run(s, next, level, stats, e);
    });
  };
}
