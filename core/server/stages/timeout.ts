/**
 * Stage: the request timeout (--request-timeout, or less with ?timeout=). A request not answered by its
 * deadline gets 504; one whose answer started but could not be delivered by then (a client that does
 * not read) has its connection dropped, as upstream's server does. Watches keep their own timeout.
 * Deadlines are checked by one sweeper instead of a timer per request.
 */
import { errors } from '../../api/status.js';
import { parseDuration } from '../options.js';
import type { Stage } from '../chain.js';
import { sendStatus } from '../respond.js';
import type { RequestScope } from '../../request/scope.js';
import { isLongRunning } from './long-running.js';

export class DeadlineSweeper {
  /**
   * The requests with a deadline, in slots that ending requests give back. Not a Set: a Set's hash
   * table is replaced as it churns, and V8 links each replaced table to the next; once one of them had
   * been promoted, that chain kept every request in flight at each young collection alive into the
   * old generation (2.4 KB a request, a third of the server's CPU in collections).
   */
  private readonly slots: (RequestScope | undefined)[] = [];
  private readonly free: number[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly everyMs = 100) {}

  track(s: RequestScope): void {
    const i = this.free.length > 0 ? this.free.pop()! : this.slots.push(undefined) - 1;
    this.slots[i] = s;
    s.sink.onClose(() => this.release(i, s));
    if (!this.timer) {
      this.timer = setInterval(() => this.sweep(), this.everyMs);
      this.timer.unref();
    }
  }

  /** Gives slot `i` back if `s` still holds it (the sweep may have released it first). */
  private release(i: number, s: RequestScope): void {
    if (this.slots[i] !== s) return;
    this.slots[i] = undefined;
    this.free.push(i);
  }

  /** How many requests are tracked (for tests). */
  get tracked(): number {
    return this.slots.length - this.free.length;
  }

  private sweep(): void {
    const now = Date.now();
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (s === undefined || s.deadline > now) continue;
      this.release(i, s);
      if (s.sink.closed) continue;
      if (!s.sink.started) sendStatus(s, errors.timeout('request did not complete within requested timeout - context deadline exceeded', 0));
      else s.sink.abort();
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

/** `onBadTimeout` sees a request refused for its ?timeout= (the audit of failed requests, as upstream's WithRequestDeadline). */
export function withTimeout(defaultMs: number, sweeper: DeadlineSweeper, onBadTimeout?: (s: RequestScope, message: string) => void): Stage {
  return (next) => (s) => {
    if (isLongRunning(s)) return next(s);
    let ms = defaultMs;
    const asked = s.query.get('timeout');
    if (asked) {
      let parsed: number;
      try {
        parsed = parseDuration(asked);
      } catch {
        const e = errors.badRequest(`invalid timeout specified in the request URL: ${asked}`);
        onBadTimeout?.(s, e.message);
        throw e;
      }
      if (parsed > 0 && parsed < ms) ms = parsed;
    }
    if (ms > 0) {
      s.deadline = Date.now() + ms;
      sweeper.track(s);
    }
    return next(s);
  };
}
