/**
 * Stage: one log line per request at verbosity 3, as upstream's HTTP log (verb, URI, latency, user
 * agent, the audit ID its answer carries, source IP, response code). Below -v=3 the stage is not in
 * the chain at all.
 */
import { isPromise } from '../../api/maybe-async.js';
import { toStatusError } from '../../api/status.js';
import type { Logger } from '../../log/logger.js';
import type { Stage } from '../chain.js';
import type { RequestScope } from '../scope.js';

export const REQUEST_LOG_LEVEL = 3;

/** Upstream logs at most this much of an audit ID (a client may send a long one). */
const MAX_LOGGED_AUDIT_ID = 64;

/**
 * The request's audit ID as the line carries it: the one its answer's Audit-Id header carries (the
 * client's, or the one made for it), cut to its first 64 characters as upstream's GetAuditIDTruncated.
 */
export const loggedAuditID = (id: string): string => (id.length > MAX_LOGGED_AUDIT_ID ? id.slice(0, MAX_LOGGED_AUDIT_ID) : id);

export function withRequestLog(log: Logger): Stage {
  const line = (s: RequestScope, err?: unknown): void => {
    const code = s.sink.code || (err !== undefined ? toStatusError(err).code : 200);
    const ua = s.headers['user-agent'];
    log.info(
      'HTTP',
      {
        verb: s.method,
        URI: s.rawQuery ? `${s.path}?${s.rawQuery}` : s.path,
        latency: `${(performance.now() - s.startedAt).toFixed(3)}ms`,
        userAgent: typeof ua === 'string' ? ua : '',
        'audit-ID': loggedAuditID(s.auditID),
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
