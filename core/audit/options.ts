/**
 * The audit flags, spelled and defaulted as upstream's (--audit-policy-file, --audit-log-*,
 * --audit-webhook-*). core/server/options.ts adds them to its table; their checks run with the others.
 */
import { EVENT_API_VERSION } from './event.js';

export interface AuditOptions {
  auditPolicyFile: string;
  auditLogPath: string;
  auditLogMaxage: number;
  auditLogMaxbackup: number;
  auditLogMaxsize: number;
  auditLogMode: string;
  auditLogFormat: string;
  auditLogVersion: string;
  auditLogBatchBufferSize: number;
  auditWebhookConfigFile: string;
  auditWebhookMode: string;
  auditWebhookVersion: string;
  auditWebhookBatchBufferSize: number;
  auditWebhookBatchMaxSize: number;
  auditWebhookBatchMaxWaitMs: number;
  auditWebhookBatchThrottleEnable: boolean;
  auditWebhookBatchThrottleQps: number;
  auditWebhookBatchThrottleBurst: number;
  auditWebhookInitialBackoffMs: number;
}

export interface AuditFlagSpec {
  name: string;
  key: keyof AuditOptions;
  kind: 'int' | 'string' | 'bool' | 'duration';
  def: unknown;
  help: string;
}

const modes = ['batch', 'blocking', 'blocking-strict'];
/** The event versions a backend may write: ours, and upstream's spelling for tools that expect it. */
export const eventVersions = [EVENT_API_VERSION, 'audit.k8s.io/v1'];

export const auditFlags: readonly AuditFlagSpec[] = [
  { name: 'audit-policy-file', key: 'auditPolicyFile', kind: 'string', def: '', help: 'Path to the audit policy (audit.svc.io/v1 Policy; audit.k8s.io/v1 is read too). Without it nothing is audited.' },
  { name: 'audit-log-path', key: 'auditLogPath', kind: 'string', def: '', help: 'If set, audit events are written to this file, one JSON object per line; "-" means standard out.' },
  { name: 'audit-log-maxage', key: 'auditLogMaxage', kind: 'int', def: 0, help: 'Days to keep old audit log files (by the timestamp in their name); 0 keeps them regardless of age.' },
  { name: 'audit-log-maxbackup', key: 'auditLogMaxbackup', kind: 'int', def: 0, help: 'Old audit log files to keep; 0 keeps all (subject to --audit-log-maxage).' },
  { name: 'audit-log-maxsize', key: 'auditLogMaxsize', kind: 'int', def: 0, help: 'Megabytes of the audit log file before it is rotated to <name>-<UTC time>.<ext>; 0 means 100, as upstream.' },
  { name: 'audit-log-mode', key: 'auditLogMode', kind: 'string', def: 'blocking', help: 'blocking (every event queued, none dropped; the request never waits for the disk), blocking-strict (also refuses a request whose RequestReceived event cannot be written while the log is failing), batch (at most --audit-log-batch-buffer-size queued; more are dropped and counted).' },
  { name: 'audit-log-format', key: 'auditLogFormat', kind: 'string', def: 'json', help: 'Format of the audit log: json (upstream\'s legacy text format is not offered).' },
  { name: 'audit-log-version', key: 'auditLogVersion', kind: 'string', def: EVENT_API_VERSION, help: `apiVersion of the events in the log: ${eventVersions.join(' or ')}.` },
  { name: 'audit-log-batch-buffer-size', key: 'auditLogBatchBufferSize', kind: 'int', def: 10_000, help: 'Events queued at most for the log in batch mode.' },
  { name: 'audit-webhook-config-file', key: 'auditWebhookConfigFile', kind: 'string', def: '', help: 'Path to a kubeconfig-format file naming the remote audit webhook; events are POSTed to it as an EventList.' },
  { name: 'audit-webhook-mode', key: 'auditWebhookMode', kind: 'string', def: 'batch', help: 'batch (buffered and sent asynchronously in batches; a full buffer drops events), blocking (each event sent as it happens; the request waits for its RequestReceived event), blocking-strict (as blocking, and the request fails when that send fails).' },
  { name: 'audit-webhook-version', key: 'auditWebhookVersion', kind: 'string', def: EVENT_API_VERSION, help: `apiVersion of the EventList sent to the webhook: ${eventVersions.join(' or ')}.` },
  { name: 'audit-webhook-batch-buffer-size', key: 'auditWebhookBatchBufferSize', kind: 'int', def: 10_000, help: 'Events buffered before batching; beyond it events are dropped and counted.' },
  { name: 'audit-webhook-batch-max-size', key: 'auditWebhookBatchMaxSize', kind: 'int', def: 400, help: 'Largest batch sent to the webhook.' },
  { name: 'audit-webhook-batch-max-wait', key: 'auditWebhookBatchMaxWaitMs', kind: 'duration', def: 30_000, help: 'How long the first event of a batch waits before a batch that is not full is sent.' },
  { name: 'audit-webhook-batch-throttle-enable', key: 'auditWebhookBatchThrottleEnable', kind: 'bool', def: true, help: 'Whether batches sent to the webhook are throttled.' },
  { name: 'audit-webhook-batch-throttle-qps', key: 'auditWebhookBatchThrottleQps', kind: 'int', def: 10, help: 'Batches sent per second at most (with throttling).' },
  { name: 'audit-webhook-batch-throttle-burst', key: 'auditWebhookBatchThrottleBurst', kind: 'int', def: 15, help: 'Batches sent at once when the throttle has not been used recently.' },
  { name: 'audit-webhook-initial-backoff', key: 'auditWebhookInitialBackoffMs', kind: 'duration', def: 10_000, help: 'Wait before retrying the first failed send; each retry waits 1.5 times longer (5 attempts).' },
];

/** The audit flags' own checks, worded as upstream's; undefined when they hold. */
export function auditFlagError(o: AuditOptions): string | undefined {
  if (!modes.includes(o.auditLogMode)) return `--audit-log-mode: invalid audit log mode ${JSON.stringify(o.auditLogMode)}, allowed modes are ${JSON.stringify(modes.join(','))}`;
  if (!modes.includes(o.auditWebhookMode)) return `--audit-webhook-mode: invalid audit webhook mode ${JSON.stringify(o.auditWebhookMode)}, allowed modes are ${JSON.stringify(modes.join(','))}`;
  if (o.auditLogFormat !== 'json') return `--audit-log-format: invalid audit log format ${JSON.stringify(o.auditLogFormat)}, allowed formats are "json"`;
  if (!eventVersions.includes(o.auditLogVersion)) return `--audit-log-version: invalid version ${JSON.stringify(o.auditLogVersion)}, allowed versions are ${eventVersions.join(', ')}`;
  if (!eventVersions.includes(o.auditWebhookVersion)) return `--audit-webhook-version: invalid version ${JSON.stringify(o.auditWebhookVersion)}, allowed versions are ${eventVersions.join(', ')}`;
  for (const [flag, v] of [
    ['--audit-log-maxage', o.auditLogMaxage],
    ['--audit-log-maxbackup', o.auditLogMaxbackup],
    ['--audit-log-maxsize', o.auditLogMaxsize],
  ] as const) {
    if (v < 0) return `${flag} must be 0 or more`;
  }
  for (const [flag, v] of [
    ['--audit-log-batch-buffer-size', o.auditLogBatchBufferSize],
    ['--audit-webhook-batch-buffer-size', o.auditWebhookBatchBufferSize],
    ['--audit-webhook-batch-max-size', o.auditWebhookBatchMaxSize],
  ] as const) {
    if (v <= 0) return `${flag}: invalid value ${v}, must be greater than 0`;
  }
  if (o.auditWebhookBatchThrottleEnable && o.auditWebhookBatchThrottleQps <= 0) return '--audit-webhook-batch-throttle-qps: must be greater than 0 when throttling is enabled';
  return undefined;
}
