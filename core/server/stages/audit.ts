/**
 * Stage: the audit (upstream's WithAudit), right after authentication and before impersonation, so
 * the policy sees the authenticated user and the event records an impersonated one. The policy is
 * asked once per request; a request it audits at None costs nothing more. An audited request gets an
 * event (scope.audit, where later stages add annotations), a sink wrapper that notes the answer, and
 * a readBody that keeps the body for the event. Failed authentications are audited by the
 * authentication stage through `auditFailedAuthentication` (core/audit/record.ts), as upstream.
 */
import { isPromise } from '../../api/maybe-async.js';
import { errors } from '../../api/status.js';
import type { Auditor } from '../../audit/auditor.js';
import { AuditRecord } from '../../audit/record.js';
import { auditStats } from '../../audit/stats.js';
import type { Handler, Stage } from '../chain.js';
import { sendStatus } from '../respond.js';
import type { RequestScope } from '../../request/scope.js';
import { isLongRunning } from './long-running.js';

export function withAudit(a: Auditor): Stage {
  return (next) => (s) => {
    const cfg = a.policy.evaluate({ user: s.user, info: s.info, path: s.path });
    auditStats.levels[cfg.level]++;
    if (cfg.level === 'None') return next(s);
    const rec = new AuditRecord(a, s, cfg, isLongRunning(s));
    s.audit = rec;
    const stored = rec.received();
    if (isPromise(stored)) return stored.then((ok) => serve(next, s, rec, ok));
    return serve(next, s, rec, stored);
  };
}

const refuse = (): never => {
  auditStats.requestsRejected++;
  throw errors.internal(new Error('failed to store audit event'));
};

function serve(next: Handler, s: RequestScope, rec: AuditRecord, stored: boolean): ReturnType<Handler> {
  if (!stored) return refuse();
  s.sink = rec.sink();
  if (rec.readsBody()) {
    const read = s.readBody;
    s.readBody = (limit) =>
      read(limit).then((b) => {
        rec.requestBody(b);
        return b;
      });
  }
  let r;
  try {
    r = next(s);
  } catch (e) {
    return rec.failed(e, (err) => void sendStatus(s, err));
  }
  if (!isPromise(r)) return rec.settled();
  return r.then(
    () => rec.settled(),
    (e: unknown) => rec.failed(e, (err) => void sendStatus(s, err)),
  );
}
