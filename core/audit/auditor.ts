/**
 * The auditor: the policy and the backends, built from the flags at start (a bad policy, webhook
 * configuration or log path stops the start), and the writing of one event stage to every backend.
 * Without a policy file, or with one but no backend, there is no auditor and the chain has no audit
 * stage at all.
 */
import type { MaybePromise } from '../api/maybe-async.js';
import type { Backend } from './backend.js';
import { annotationsJsonOf, type AuditEvent, eventLine, identityJson, nowMicro, quoted } from './event.js';
import { type LineSink, LogBackend, type LogBackendOptions } from './log-backend.js';
import type { AuditOptions } from './options.js';
import { loadPolicyFile, type Policy, type Stage } from './policy.js';
import { auditStats } from './stats.js';
import { WebhookBackend } from './webhook-backend.js';

/** The JSON of an event's parts that its record keeps from one stage to the next. */
export interface EventParts {
  auditID(): string;
  identity(): string;
  annotations(): string | undefined;
}

export class Auditor {
  constructor(
    readonly policy: Policy,
    readonly backends: readonly Backend[],
  ) {}

  /**
   * Writes `ev` at `stage` to every backend, unless the stage is omitted. False when a blocking-strict
   * backend could not store it; a promise only when a blocking webhook is sending.
   */
  process(ev: AuditEvent, stage: Stage, omit: ReadonlySet<Stage>, parts?: EventParts): MaybePromise<boolean> {
    if (omit.has(stage)) return true;
    const identity = parts ? parts.identity() : identityJson(ev);
    const annotations = parts ? parts.annotations() : annotationsJsonOf(ev.annotations);
    const auditID = parts ? parts.auditID() : quoted(ev.auditID);
    ev.stage = stage;
    ev.stageTimestamp = stage === 'RequestReceived' ? ev.requestReceivedTimestamp : nowMicro();
    auditStats.events++;
    let ok = true;
    let waits: Promise<boolean>[] | undefined;
    let line = '';
    let lineVersion = '';
    for (const b of this.backends) {
      if (b.apiVersion !== lineVersion) {
        ev.apiVersion = lineVersion = b.apiVersion;
        line = eventLine(ev, identity, annotations, auditID);
      }
      const r = b.process(line);
      if (typeof r === 'boolean') {
        if (!r && b.strict) ok = false;
      } else (waits ??= []).push(b.strict ? r : r.then(() => true));
    }
    if (!waits) return ok;
    return Promise.all(waits).then((all) => ok && all.every(Boolean));
  }

  async shutdown(): Promise<void> {
    await Promise.all(this.backends.map((b) => b.shutdown()));
  }
}

/** The log backend's options from the flags; undefined without a policy or a log path. */
export function logBackendOptions(o: AuditOptions): LogBackendOptions | undefined {
  if (!o.auditPolicyFile || !o.auditLogPath) return undefined;
  return {
    path: o.auditLogPath,
    maxAgeDays: o.auditLogMaxage,
    maxBackups: o.auditLogMaxbackup,
    maxSizeMB: o.auditLogMaxsize,
    mode: o.auditLogMode as 'blocking',
    bufferSize: o.auditLogBatchBufferSize,
  };
}

/**
 * Builds the auditor the flags ask for; undefined when nothing is to be audited. Throws start errors.
 * `logLines`: where the log backend's lines go instead of the file it would open (an acceptor's primary).
 */
export function buildAuditor(o: AuditOptions, logLines?: LineSink): Auditor | undefined {
  if (!o.auditPolicyFile) return undefined;
  const policy = loadPolicyFile(o.auditPolicyFile, (msg) => console.warn(`svc-apiserver: ${msg}`));
  const backends: Backend[] = [];
  try {
    const logOptions = logBackendOptions(o);
    if (logOptions) backends.push(new LogBackend(logOptions, o.auditLogVersion, logLines));
    if (o.auditWebhookConfigFile) {
      backends.push(
        new WebhookBackend(
          {
            configFile: o.auditWebhookConfigFile,
            mode: o.auditWebhookMode as 'batch',
            bufferSize: o.auditWebhookBatchBufferSize,
            maxBatchSize: o.auditWebhookBatchMaxSize,
            maxBatchWaitMs: o.auditWebhookBatchMaxWaitMs,
            throttleEnable: o.auditWebhookBatchThrottleEnable,
            throttleQPS: o.auditWebhookBatchThrottleQps,
            throttleBurst: o.auditWebhookBatchThrottleBurst,
            initialBackoffMs: o.auditWebhookInitialBackoffMs,
          },
          o.auditWebhookVersion,
        ),
      );
    }
  } catch (e) {
    for (const b of backends) void b.shutdown();
    throw e;
  }
  if (backends.length === 0) return undefined;
  return new Auditor(policy, backends);
}
