/**
 * Stage: one log line per request at verbosity 3, as upstream's HTTP log (verb, URI, latency, user
 * agent, audit ID, source IP, response code). Below -v=3 the stage is not in the chain at all.
 */
import { isPromise } from '../../api/maybe-async.js';
import { toStatusError } from '../../api/status.js';
import type { Logger } from '../../log/logger.js';
import type { Stage } from '../chain.js';
import type { RequestScope } from '../scope.js';

export const REQUEST_LOG_LEVEL = 3;

export function withRequestLog(log: Logger): Stage {
  const line = (s: RequestScope, err?: unknown): void => {
    const code = s.sink.code || (err !== undefined ? toStatusError(err).code : 200);
    const ua = s.headers['user-agent'];
    const audit = s.headers['audit-id'];
    log.info(
      'HTTP',
      {
        verb: s.method,
        URI: s.rawQuery ? `${s.path}?${s.rawQuery}` : s.path,
        latency: `${(performance.now() - s.startedAt).toFixed(3)}ms`,
        userAgent: typeof ua === 'string' ? ua : '',
        'audit-ID': (s as { auditId?: string }).auditId ?? (typeof audit === 'string' ? audit : ''),
        srcIP: s.peer?.remoteAddress ?? '',
        resp: code,
      },
      REQUEST_LOG_LEVEL,
    );
  };
  return (next) => (s) => {
    let r;
    try {
      r = next(s);
    } catch (e) {
      line(s, e);
      throw e;
    }
    if (!isPromise(r)) {
      line(s);
      return r;
    }
    return r.then(
      () => line(s),
      (e: unknown) => {
        line(s, e);
        throw e;
      },
    );
  };
}
