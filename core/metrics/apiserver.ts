/**
 * The server's metrics, with upstream's names, labels, buckets and stability classes. Declared once
 * here; the request stages, the watch stream, the store wrapper and the scrape-time collectors feed
 * them. Hot paths hold a cached child and pay an increment or a bucket search, nothing more.
 */
import { type Aggregator, collectDefaultMetrics } from 'prom-client';
import type { AdmissionMetrics } from '../admission/metrics.js';
import { type FamilySnapshot, familySnapshots, mergeFamilies } from './merge.js';
import {
  ExpositionRegistry,
  expositionText,
  exponentialBuckets,
  type GaugeMetric,
  OPENMETRICS_CONTENT_TYPE,
  PROMETHEUS_CONTENT_TYPE,
  StabilityRegistry,
  type RegistryOptions,
} from './registry.js';

/** upstream's request latency buckets (seconds). */
/** Upstream's buckets of rest_client_request_duration_seconds. */
export const CLIENT_DURATION_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];
export const REQUEST_DURATION_BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];
const REQUEST_LABELS = ['verb', 'dry_run', 'group', 'version', 'resource', 'subresource', 'scope', 'component'];

export interface ReloadFigures {
  lastTimestampSeconds: Partial<Record<string, number>>;
  reloadsTotal: Record<string, number>;
  configHash: string;
}

/** Figures read at scrape time from parts that keep their own counts. */
export interface MetricSources {
  /** Objects stored per resource (`<plural>` or `<plural>.<group>`), from the watch cache. */
  storedObjects?: () => Iterable<[string, number]>;
  /** In-flight requests now and the most seen since the last scrape. */
  inflight?: () => { readOnly: number; mutating: number };
  /** --authentication-config reload outcomes. */
  authnConfigReloads?: () => ReloadFigures | undefined;
  /** --authorization-config reload outcomes. */
  authzConfigReloads?: () => ReloadFigures | undefined;
  /** --encryption-provider-config reload outcomes (automatic reload on). */
  encryptionConfigReloads?: () => ReloadFigures | undefined;
  /** Audit events generated, errors by backend plugin, policy levels, requests refused for want of an audit event. */
  audit?: () => { events: number; errors: Record<string, number>; levels: Record<string, number>; requestsRejected: number };
  /** sha256 of this server's identity (upstream's apiserver_id_hash label). */
  apiserverIdHash?: string;
  /** Calls made to webhooks: [code, host, method, count]. */
  webhookCalls?: () => Iterable<[string, string, string, number]>;
}

/** What the authentication stage reports. */
export interface AuthenticationMetrics {
  attempt(result: 'success' | 'failure' | 'error', seconds: number): void;
  user(username: string): void;
}

let processRegistriesOnce: { text: ExpositionRegistry; openMetrics: ExpositionRegistry } | undefined;

/**
 * process_* and nodejs_* (upstream's process_* and go_*), printed without a stability class as upstream
 * prints them. One pair per process: their collectors watch the process, not a server.
 */
function processRegistries(): { text: ExpositionRegistry; openMetrics: ExpositionRegistry } {
  if (!processRegistriesOnce) {
    const text = new ExpositionRegistry(false);
    const openMetrics = new ExpositionRegistry(true);
    collectDefaultMetrics({ register: text });
    collectDefaultMetrics({ register: openMetrics });
    // prom-client declares these; it omits the start time when merging processes, but the server
    // started when its first process did
    for (const r of [text, openMetrics]) (r.getSingleMetric('process_start_time_seconds') as unknown as { aggregator: Aggregator }).aggregator = 'min';
    processRegistriesOnce = { text, openMetrics };
  }
  return processRegistriesOnce;
}

/**
 * The figures of one acceptor process, as plain data that survives JSON (the cluster IPC channel):
 * its server families and its process families, each with the aggregator that merges it.
 */
export interface MetricsSnapshot {
  server: FamilySnapshot[];
  process: FamilySnapshot[];
}

/** One document of the server's families followed by the process's (OpenMetrics: a single `# EOF`, last). */
function serverThenProcess(server: string, proc: string, openMetrics: boolean): string {
  return openMetrics ? server.replace(/# EOF\n?$/, '') + proc : server + proc;
}

/**
 * The exposition of a server that runs as several acceptor processes: every acceptor's snapshot
 * merged, written as ApiserverMetrics.expose writes one process's (one snapshot gives the same text).
 */
export function exposeMerged(snapshots: readonly MetricsSnapshot[], openMetrics: boolean): { contentType: string; body: string } {
  if (snapshots.length === 0) throw new Error('a merged exposition needs at least one snapshot');
  const server = expositionText(mergeFamilies(snapshots.map((s) => s.server)), openMetrics);
  const proc = expositionText(mergeFamilies(snapshots.map((s) => s.process)), openMetrics);
  return { contentType: openMetrics ? OPENMETRICS_CONTENT_TYPE : PROMETHEUS_CONTENT_TYPE, body: serverThenProcess(server, proc, openMetrics) };
}

export class ApiserverMetrics implements AuthenticationMetrics {
  readonly registry: StabilityRegistry;
  readonly requests;
  readonly requestDuration;
  readonly responseSizes;
  readonly longRunning;
  readonly terminations;
  readonly watchEvents;
  readonly watchEventSizes;
  readonly storeDuration;
  readonly deprecatedApis;
  readonly authorizationDecisions;
  readonly authenticationAttempts;
  readonly authenticationDuration;
  readonly authenticatedUsers;
  readonly webhookDuration;

  constructor(o: RegistryOptions = {}, private readonly sources: MetricSources = {}) {
    const r = (this.registry = new StabilityRegistry(o));
    this.requests = r.counter({
      name: 'apiserver_request_total',
      stability: 'STABLE',
      help: 'Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.',
      labelNames: [...REQUEST_LABELS, 'code'],
    });
    this.requestDuration = r.histogram({
      name: 'apiserver_request_duration_seconds',
      stability: 'STABLE',
      help: 'Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.',
      labelNames: REQUEST_LABELS,
      buckets: REQUEST_DURATION_BUCKETS,
    });
    this.responseSizes = r.histogram({
      name: 'apiserver_response_sizes',
      stability: 'STABLE',
      help: 'Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.',
      labelNames: ['verb', 'group', 'version', 'resource', 'subresource', 'scope', 'component'],
      // 1 KB to 1 GB, as upstream's ExponentialBuckets(1000, 10, 7)
      buckets: exponentialBuckets(1000, 10, 7),
    });
    r.gauge({
      name: 'apiserver_current_inflight_requests',
      stability: 'STABLE',
      help: 'Maximal number of currently used inflight request limit of this apiserver per request kind in last second.',
      labelNames: ['request_kind'],
      // each acceptor's own peak: the sum bounds the server's (peaks need not coincide)
      aggregator: 'sum',
      collect: (g) => this.collectInflight(g),
    });
    this.longRunning = r.gauge({
      name: 'apiserver_longrunning_requests',
      stability: 'STABLE',
      help: 'Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.',
      labelNames: ['verb', 'group', 'version', 'resource', 'subresource', 'scope', 'component'],
      aggregator: 'sum',
    });
    this.terminations = r.counter({
      name: 'apiserver_request_terminations_total',
      stability: 'ALPHA',
      help: 'Number of requests which apiserver terminated in self-defense.',
      labelNames: ['verb', 'group', 'version', 'resource', 'subresource', 'scope', 'component', 'code'],
    });
    this.watchEvents = r.counter({
      name: 'apiserver_watch_events_total',
      stability: 'ALPHA',
      help: 'Number of events sent in watch clients',
      labelNames: ['group', 'version', 'kind'],
    });
    this.watchEventSizes = r.histogram({
      name: 'apiserver_watch_events_sizes',
      stability: 'ALPHA',
      help: 'Watch event size distribution in bytes',
      labelNames: ['group', 'version', 'kind'],
      buckets: exponentialBuckets(1024, 2, 8),
    });
    r.gauge({
      name: 'apiserver_storage_objects',
      stability: 'STABLE',
      help: 'Number of stored objects at the time of last check split by kind.',
      labelNames: ['resource'],
      // every acceptor's watch cache holds the same objects: the count of one, the newest if they lag
      aggregator: 'max',
      collect: (g) => {
        g.prom.reset();
        for (const [resource, n] of this.sources.storedObjects?.() ?? []) g.with(resource).set(n);
      },
    });
    // upstream's etcd_request_duration_seconds, named for what it times whichever backend runs
    this.storeDuration = r.histogram({
      name: 'apiserver_storage_request_duration_seconds',
      stability: 'ALPHA',
      help: 'Storage request latency in seconds for each operation and object type.',
      labelNames: ['operation', 'type'],
      buckets: REQUEST_DURATION_BUCKETS,
    });
    this.deprecatedApis = r.gauge({
      name: 'apiserver_requested_deprecated_apis',
      stability: 'STABLE',
      help: 'Gauge of deprecated APIs that have been requested, broken out by API group, version, resource, subresource, and removed_release.',
      labelNames: ['group', 'version', 'resource', 'subresource', 'removed_release'],
      // 1 once requested, by whichever acceptor served it
      aggregator: 'max',
    });
    this.authorizationDecisions = r.counter({
      name: 'apiserver_authorization_decisions_total',
      stability: 'ALPHA',
      help: 'Total number of terminal decisions made by an authorizer split by authorizer type, name, and decision.',
      labelNames: ['type', 'name', 'decision'],
    });
    this.authenticationAttempts = r.counter({
      name: 'authentication_attempts',
      stability: 'ALPHA',
      help: 'Counter of authenticated attempts.',
      labelNames: ['result'],
    });
    this.authenticationDuration = r.histogram({
      name: 'authentication_duration_seconds',
      stability: 'ALPHA',
      help: 'Authentication duration in seconds broken out by result.',
      labelNames: ['result'],
      buckets: exponentialBuckets(0.001, 2, 15),
    });
    this.authenticatedUsers = r.counter({
      name: 'authenticated_user_requests',
      stability: 'ALPHA',
      help: 'Counter of authenticated requests broken out by username.',
      labelNames: ['username'],
    });
    this.declareAuditMetrics();
    this.registry.counter({
      name: 'rest_client_requests_total',
      stability: 'ALPHA',
      help: 'Number of HTTP requests, partitioned by status code, method, and host.',
      labelNames: ['code', 'method', 'host'],
      collect: (c) => {
        for (const [code, host, method, n] of this.sources.webhookCalls?.() ?? []) c.with(code, method, host).inc(n);
      },
    });
    this.webhookDuration = this.registry.histogram({
      name: 'rest_client_request_duration_seconds',
      stability: 'ALPHA',
      help: 'Request latency in seconds. Broken down by verb, and host.',
      labelNames: ['verb', 'host'],
      buckets: CLIENT_DURATION_BUCKETS,
    });
    this.declareReloadMetrics('authentication', () => this.sources.authnConfigReloads?.());
    this.declareReloadMetrics('authorization', () => this.sources.authzConfigReloads?.());
    this.declareReloadMetrics('encryption', () => this.sources.encryptionConfigReloads?.());
  }

  /** Members of a chain that only pass on another chain's decision are not counted again. */
  private static readonly relays = new Set(['chain', 'authorization-config', 'privileged-groups']);

  /** apiserver_authorization_decisions_total for one decision; type as upstream spells modes (RBAC, Node, Webhook...). */
  decision(authorizerType: string, name: string, decision: 'allowed' | 'denied'): void {
    if (ApiserverMetrics.relays.has(name)) return;
    this.authorizationDecisions.with(authorizerType, name, decision).inc();
  }

  /** The exposition, with the process-wide runtime metrics. */
  async expose(openMetrics: boolean): Promise<{ contentType: string; body: string }> {
    const own = await this.registry.expose(openMetrics);
    const proc = processRegistries();
    const extra = await (openMetrics ? proc.openMetrics : proc.text).metrics();
    return { contentType: own.contentType, body: serverThenProcess(own.body, extra, openMetrics) };
  }

  /** What expose(openMetrics) would print now, as data for exposeMerged (collectors run, hidden metrics left out alike). */
  async snapshot(openMetrics: boolean): Promise<MetricsSnapshot> {
    const proc = processRegistries();
    const server = await familySnapshots(openMetrics ? this.registry.openMetrics : this.registry.text);
    return { server, process: await familySnapshots(openMetrics ? proc.openMetrics : proc.text) };
  }

  attempt(result: 'success' | 'failure' | 'error', seconds: number): void {
    this.authenticationAttempts.with(result).inc();
    this.authenticationDuration.with(result).observe(seconds);
  }

  /** upstream's authenticated_user_requests: the admin user apart, everyone else as "other" (bounded labels). */
  user(username: string): void {
    this.authenticatedUsers.with(username === 'admin' ? 'admin' : 'other').inc();
  }

  private admissionFamilies: AdmissionMetrics | undefined;

  /** Admission's metrics (declared on first use: a server without admission prints none of them). */
  admission(): AdmissionMetrics {
    if (this.admissionFamilies) return this.admissionFamilies;
    const r = this.registry;
    const stepBuckets = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5];
    const step = r.histogram({
      name: 'apiserver_admission_step_admission_duration_seconds',
      stability: 'STABLE',
      help: 'Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).',
      labelNames: ['operation', 'rejected', 'type'],
      buckets: stepBuckets,
    });
    const plugin = r.histogram({
      name: 'apiserver_admission_controller_admission_duration_seconds',
      stability: 'STABLE',
      help: 'Admission controller latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).',
      labelNames: ['name', 'operation', 'rejected', 'type'],
      buckets: stepBuckets,
    });
    const webhook = r.histogram({
      name: 'apiserver_admission_webhook_admission_duration_seconds',
      stability: 'STABLE',
      help: 'Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).',
      labelNames: ['name', 'operation', 'rejected', 'type'],
      buckets: [0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25],
    });
    const webhookRequests = r.counter({
      name: 'apiserver_admission_webhook_request_total',
      stability: 'ALPHA',
      help: 'Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.',
      labelNames: ['code', 'name', 'operation', 'rejected', 'type'],
    });
    const rejections = r.counter({
      name: 'apiserver_admission_webhook_rejection_count',
      stability: 'ALPHA',
      help: 'Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.',
      labelNames: ['error_type', 'name', 'operation', 'rejection_code', 'type'],
    });
    const failOpen = r.counter({
      name: 'apiserver_admission_webhook_fail_open_count',
      stability: 'ALPHA',
      help: 'Admission webhook fail open count, identified by name and broken out for each admission type (validating or admit).',
      labelNames: ['name', 'type'],
    });
    const policyChecks = r.counter({
      name: 'apiserver_validating_admission_policy_check_total',
      stability: 'BETA',
      help: 'Validation admission policy check total, labeled by policy and further identified by binding and enforcement action taken.',
      labelNames: ['enforcement_action', 'error_type', 'policy', 'policy_binding'],
    });
    const policyDuration = r.histogram({
      name: 'apiserver_validating_admission_policy_check_duration_seconds',
      stability: 'BETA',
      help: 'Validation admission latency for individual validation expressions in seconds, labeled by policy and further including binding and enforcement action taken.',
      labelNames: ['enforcement_action', 'error_type', 'policy', 'policy_binding'],
      buckets: [0.0000005, 0.001, 0.01, 0.1, 1.0],
    });
    const capped = (code: number): string => String(Math.min(code, 600));
    this.admissionFamilies = {
      step: (type, operation, rejected, seconds) => step.with(operation, String(rejected), type).observe(seconds),
      plugin: (name, type, operation, rejected, seconds) => plugin.with(name, operation, String(rejected), type).observe(seconds),
      webhook: (name, type, operation, rejected, code, seconds) => {
        webhook.with(name, operation, String(rejected), type).observe(seconds);
        webhookRequests.with(capped(code), name, operation, String(rejected), type).inc();
      },
      webhookRejection: (name, type, operation, errorType, code) => rejections.with(errorType, name, operation, capped(code), type).inc(),
      webhookFailOpen: (name, type) => failOpen.with(name, type).inc(),
      policyCheck: (policy, binding, errorType, action, seconds) => {
        policyChecks.with(action, errorType, policy, binding).inc();
        policyDuration.with(action, errorType, policy, binding).observe(seconds);
      },
    };
    return this.admissionFamilies;
  }

  private collectInflight(g: GaugeMetric): void {
    const now = this.sources.inflight?.();
    if (!now) return;
    g.with('readOnly').set(now.readOnly);
    g.with('mutating').set(now.mutating);
  }

  private declareAuditMetrics(): void {
    const r = this.registry;
    r.counter({
      name: 'apiserver_audit_event_total',
      stability: 'ALPHA',
      help: 'Counter of audit events generated and sent to the audit backend.',
      collect: (c) => c.inc(this.sources.audit?.().events ?? 0),
    });
    r.counter({
      name: 'apiserver_audit_error_total',
      stability: 'ALPHA',
      help: 'Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.',
      labelNames: ['plugin'],
      collect: (g) => {
        for (const [plugin, n] of Object.entries(this.sources.audit?.().errors ?? {})) g.with(plugin).inc(n);
      },
    });
    r.counter({
      name: 'apiserver_audit_level_total',
      stability: 'ALPHA',
      help: 'Counter of policy levels for audit events (1 per request).',
      labelNames: ['level'],
      collect: (c) => {
        for (const [level, n] of Object.entries(this.sources.audit?.().levels ?? {})) if (n) c.with(level).inc(n);
      },
    });
    r.counter({
      name: 'apiserver_audit_requests_rejected_total',
      stability: 'ALPHA',
      help: 'Counter of apiserver requests rejected due to an error in audit logging backend.',
      collect: (c) => c.inc(this.sources.audit?.().requestsRejected ?? 0),
    });
  }

  /** apiserver_<what>_config_controller_*: reloads of --authentication-config or --authorization-config. */
  private declareReloadMetrics(what: 'authentication' | 'authorization' | 'encryption', figures: () => ReloadFigures | undefined): void {
    const r = this.registry;
    const id = this.sources.apiserverIdHash ?? '';
    r.gauge({
      name: `apiserver_${what}_config_controller_automatic_reload_last_timestamp_seconds`,
      stability: 'ALPHA',
      help: `Timestamp of the last automatic reload of ${what} configuration split by status and apiserver identity.`,
      labelNames: ['status', 'apiserver_id_hash'],
      // the latest reload of the file every acceptor watches
      aggregator: 'max',
      collect: (g) => {
        const s = figures();
        for (const [status, t] of Object.entries(s?.lastTimestampSeconds ?? {})) if (t !== undefined) g.with(status, id).set(t);
      },
    });
    r.counter({
      name: `apiserver_${what}_config_controller_automatic_reloads_total`,
      stability: 'ALPHA',
      help: `Total number of automatic reloads of ${what} configuration split by status and apiserver identity.`,
      labelNames: ['status', 'apiserver_id_hash'],
      // every acceptor reloads the same file: each counts the server's reloads, so summing would count each N times
      aggregator: 'max',
      collect: (g) => {
        const s = figures();
        for (const [status, n] of Object.entries(s?.reloadsTotal ?? {})) if (n) g.with(status, id).inc(n);
      },
    });
    r.gauge({
      name: `apiserver_${what}_config_controller_last_config_info`,
      stability: 'ALPHA',
      help: `Information about the last applied ${what} configuration with hash as label, split by apiserver identity.`,
      labelNames: ['apiserver_id_hash', 'hash'],
      // 1 for the applied hash (an acceptor still on the previous one shows both, as during a reload)
      aggregator: 'max',
      collect: (g) => {
        g.prom.reset();
        const hash = figures()?.configHash;
        if (hash) g.with(id, hash).set(1);
      },
    });
  }
}
