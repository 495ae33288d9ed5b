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
import type { RequestScope } from '../scope.js';
import { isLongRunning } from './long-running.js';

export class DeadlineSweeper {
  private readonly pending = new Set<RequestScope>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly everyMs = 100) {}

  track(s: RequestScope): void {
    this.pending.add(s);
    s.sink.onClose(() => this.pending.delete(s));
    if (!this.timer) {
      this.timer = setInterval(() => this.sweep(), this.everyMs);
      this.timer.unref();
    }
  }

  private sweep(): void {
    const now = Date.now();
    for (const s of this.pending) {
      if (s.deadline > now) continue;
      this.pending.delete(s);
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
