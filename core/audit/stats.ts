/**
 * Audit counters, read by the metrics endpoint (upstream's apiserver_audit_event_total,
 * apiserver_audit_error_total{plugin}, apiserver_audit_level_total{level},
 * apiserver_audit_requests_rejected_total). Plain numbers bumped in place: nothing per request
 * beyond an increment.
 */
import type { Level } from './policy.js';

export type BackendName = 'log' | 'webhook';

export interface AuditStats {
  /** Events generated and handed to the backends (one per stage written, whatever the backends did). */
  events: number;
  /** Events a backend accepted, by backend. */
  written: Record<BackendName, number>;
  /** Events lost by a backend (write failure, dead webhook, full buffer), by backend. */
  errors: Record<BackendName, number>;
  /** Of those, events dropped because the backend's buffer was full, by backend. */
  dropped: Record<BackendName, number>;
  /** Policy evaluations by the level they gave (None included). */
  levels: Record<Level, number>;
  /** Requests refused because their RequestReceived event could not be stored (blocking-strict). */
  requestsRejected: number;
}

export const auditStats: AuditStats = {
  events: 0,
  written: { log: 0, webhook: 0 },
  errors: { log: 0, webhook: 0 },
  dropped: { log: 0, webhook: 0 },
  levels: { None: 0, Metadata: 0, Request: 0, RequestResponse: 0 },
  requestsRejected: 0,
};
