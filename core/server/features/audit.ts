/** Audit: the policy and backends from the flags (a bad one stops the start), the stage that records requests. */
import { buildAuditor } from '../../audit/auditor.js';
import type { ServerFeature } from '../feature.js';
import { withAudit } from '../stages/audit.js';

export function auditFeature(): ServerFeature {
  let stop: (() => Promise<void>) | undefined;
  return {
    name: 'audit',
    configure(c) {
      const auditor = buildAuditor(c.opts, c.auditLines);
      if (!auditor) return;
      c.shared.auditor = auditor;
      stop = () => auditor.shutdown();
    },
    stages: (c) => (c.shared.auditor ? { audit: withAudit(c.shared.auditor) } : {}),
    stop: () => stop?.(),
  };
}
