/**
 * Stage: admission of load (--max-requests-inflight, --max-mutating-requests-inflight). Beyond the
 * limit a request gets 429 with Retry-After. Long-running requests, health probes and system:masters
 * are never refused, as upstream. A slot is given back exactly once, when the handler settles or the
 * answer closes, whichever comes first: a request that times out, is aborted or reset frees its slot.
 */
import { isPromise } from '../../api/maybe-async.js';
import { errors } from '../../api/status.js';
import type { Stage } from '../chain.js';
import type { RequestScope } from '../../request/scope.js';
import { isHealthProbe, isLongRunning } from './long-running.js';

const mutatingVerbs = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

export class InflightCounter {
  current = 0;
  /** The most in flight since the last read of it (apiserver_current_inflight_requests reports the peak). */
  private peak = 0;
  constructor(readonly limit: number) {}

  acquire(): void {
    if (++this.current > this.peak) this.peak = this.current;
  }

  /** The peak since the last call, starting the next period at the current count. */
  takePeak(): number {
    const p = Math.max(this.peak, this.current);
    this.peak = this.current;
    return p;
  }
}

export function withMaxInFlight(readonly: InflightCounter, mutating: InflightCounter): Stage {
  return (next) => (s: RequestScope) => {
    if (isLongRunning(s) || isHealthProbe(s) || s.user.groups.includes('system:masters')) return next(s);
    const counter = mutatingVerbs.has(s.info.verb) ? mutating : readonly;
    if (counter.limit > 0 && counter.current >= counter.limit) throw errors.tooManyRequests('Too many requests, please try again later.', 1);
    counter.acquire();
    let held = true;
    const release = (): void => {
      if (!held) return;
      held = false;
      counter.current--;
    };
    let r;
    try {
      r = next(s);
    } catch (e) {
      release();
      throw e;
    }
    if (!isPromise(r)) {
      release();
      return r;
    }
    s.sink.onClose(release);
    return r.finally(release);
  };
}
