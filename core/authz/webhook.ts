/**
 * Webhook authorizer: asks a remote service by POSTing a SubjectAccessReview (authorization.svc.io,
 * `v1` or `v1beta1`) describing the request, and takes its `status` (allowed, denied, reason) as the
 * decision, as upstream's webhook authorizer does:
 *   - match conditions (CEL over the v1 spec) first: any false skips the webhook (no opinion), an
 *     error with no false applies the failure policy;
 *   - answers are cached by the exact spec, allowed ones for authorizedTTL, others for
 *     unauthorizedTTL, in a bounded LRU (8192 entries); requests whose attributes are too large to be
 *     worth a cache entry are not cached;
 *   - transient failures (connection reset, 500, 504, 429, Retry-After) are retried with backoff
 *     (500 ms, x1.5, 5 attempts), all within the timeout;
 *   - a failed call, a garbled answer or a timeout gives the failure policy's decision (NoOpinion or
 *     Deny) with the error, which the request path turns into a 500 unless a later authorizer allows.
 * A cache hit is answered synchronously; other requests never wait on a slow webhook's other calls.
 */
import type { MaybePromise } from '../api/maybe-async.js';
import type { Attributes, Authorizer, AuthorizerDecision, RulesResult } from './authorizer.js';
import { type CompiledCondition, evaluateConditions } from './match-conditions.js';
import { celRequest, specFromAttributes, type SubjectAccessReviewSpec } from './sar.js';
import { type Backoff, describeCall, WEBHOOK_BACKOFF, WebhookClient, WebhookStatusError, type WebhookTarget, WebhookTimeoutError, withBackoff } from '../webhook/client.js';

export type FailurePolicy = 'NoOpinion' | 'Deny';

export interface WebhookAuthorizerOptions {
  /** The authorizer's name (configuration file) or `webhook` (flags); used in errors and logs. */
  name: string;
  target: WebhookTarget;
  /** SubjectAccessReview version sent and expected back. */
  version: 'v1' | 'v1beta1';
  authorizedTTLMs: number;
  unauthorizedTTLMs: number;
  /** Deadline of one decision, retries included. */
  timeoutMs: number;
  failurePolicy: FailurePolicy;
  matchConditions: readonly CompiledCondition[];
  /** Upstream's AuthorizeWithSelectors: selectors of list/watch requests are sent. */
  withSelectors: boolean;
  /** Backoff between attempts (tests may shorten it); upstream's default otherwise. */
  retry?: Backoff;
}

interface ReviewStatus {
  allowed: boolean;
  denied: boolean;
  reason: string;
  evaluationError: string;
}

const CACHE_SIZE = 8192;
/** Requests whose requester-controlled attributes are this large are not cached (a DoS guard, as upstream). */
const MAX_CACHED_ATTRIBUTE_BYTES = 10_000;
const ANSWER_GROUPS = ['authorization.svc.io', 'authorization.k8s.io'];

/** A least-recently-used map whose entries expire. */
class ExpiringLru<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  constructor(private readonly capacity: number) {}

  get(key: string, now: number): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    this.entries.delete(key);
    if (e.expires <= now) return undefined;
    this.entries.set(key, e);
    return e.value;
  }

  set(key: string, value: V, expires: number): void {
    this.entries.delete(key);
    this.entries.set(key, { value, expires });
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }
}

function worthCaching(a: Attributes): boolean {
  const size = a.namespace.length + a.verb.length + a.apiGroup.length + a.apiVersion.length + a.resource.length + a.subresource.length + a.name.length + a.path.length;
  return size < MAX_CACHED_ATTRIBUTE_BYTES;
}

/** Failures worth another attempt: the remote is overloaded or the connection broke. */
function transient(err: unknown): boolean {
  if (err instanceof WebhookStatusError) return [500, 504, 429].includes(err.code) || err.retryAfter;
  const code = (err as { code?: string }).code;
  return code === 'ECONNRESET' || code === 'EPIPE' || code === 'ERR_HTTP2_STREAM_ERROR';
}

export class WebhookAuthorizer implements Authorizer {
  readonly name: string;
  private readonly client: WebhookClient;
  private readonly cache = new ExpiringLru<ReviewStatus>(CACHE_SIZE);
  private readonly onError: AuthorizerDecision['decision'];
  private readonly usesFieldSelector: boolean;
  private readonly usesLabelSelector: boolean;

  constructor(private readonly o: WebhookAuthorizerOptions) {
    this.name = o.name;
    this.client = new WebhookClient(o.target);
    this.onError = o.failurePolicy === 'Deny' ? 'deny' : 'no-opinion';
    this.usesFieldSelector = o.matchConditions.some((c) => c.usesFieldSelector);
    this.usesLabelSelector = o.matchConditions.some((c) => c.usesLabelSelector);
  }

  authorize(a: Attributes): MaybePromise<AuthorizerDecision> {
    const spec = specFromAttributes(a, this.o.withSelectors);
    if (this.o.matchConditions.length) {
      const m = evaluateConditions(this.o.matchConditions, celRequest(spec, this.usesFieldSelector, this.usesLabelSelector));
      if ('error' in m) return this.failed(m.error);
      if (!m.match) return { decision: 'no-opinion', reason: '' };
    }
    const key = JSON.stringify(spec);
    const cached = this.cache.get(key, Date.now());
    if (cached) return decisionOf(cached);
    return this.ask(spec).then(
      (status) => {
        if (worthCaching(a)) this.cache.set(key, status, Date.now() + (status.allowed ? this.o.authorizedTTLMs : this.o.unauthorizedTTLMs));
        return decisionOf(status);
      },
      (err: Error) => {
        console.warn(`svc-apiserver: authorization webhook ${JSON.stringify(this.name)}: ${err.message}`);
        return this.failed(err.message);
      },
    );
  }

  /** Upstream's webhooks cannot list rules. */
  rulesFor(): RulesResult {
    return { resourceRules: [], nonResourceRules: [], incomplete: true, evaluationError: 'webhook authorizer does not support user rule resolution' };
  }

  close(): void {
    this.client.close();
  }

  private failed(error: string): AuthorizerDecision {
    return { decision: this.onError, reason: '', error };
  }

  /** One decision from the remote, retrying transient failures while the deadline allows. */
  private async ask(spec: SubjectAccessReviewSpec): Promise<ReviewStatus> {
    try {
      return await withBackoff(async (left) => this.parse(await this.client.post(this.request(spec), left)), {
        backoff: { jitter: WEBHOOK_BACKOFF.jitter, ...(this.o.retry ?? WEBHOOK_BACKOFF) },
        retriable: transient,
        deadline: Date.now() + this.o.timeoutMs,
      });
    } catch (err) {
      throw describe(err, this.o.target.url, this.o.timeoutMs);
    }
  }

  /** The review sent: v1beta1 spells the group list `group`. */
  private request(spec: SubjectAccessReviewSpec): Record<string, unknown> {
    let wireSpec: Record<string, unknown> = spec as Record<string, unknown>;
    if (this.o.version === 'v1beta1' && spec.groups) {
      const { groups, ...rest } = spec;
      wireSpec = { ...rest, group: groups };
    }
    return {
      apiVersion: `authorization.svc.io/${this.o.version}`,
      kind: 'SubjectAccessReview',
      metadata: { creationTimestamp: null },
      spec: wireSpec,
      status: { allowed: false },
    };
  }

  /** The answer's status; anything that is not a SubjectAccessReview of the expected version is an error. */
  private parse(body: Buffer): ReviewStatus {
    let o: unknown;
    try {
      o = JSON.parse(body.toString('utf8'));
    } catch (e) {
      throw new Error(`unable to decode the answer as a SubjectAccessReview: ${(e as Error).message}`);
    }
    if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new Error('unable to decode the answer as a SubjectAccessReview: not a JSON object');
    const r = o as Record<string, unknown>;
    if (r.kind !== undefined && r.kind !== 'SubjectAccessReview') throw new Error(`the answer is a ${JSON.stringify(r.kind)}, not a SubjectAccessReview`);
    if (r.apiVersion !== undefined && !ANSWER_GROUPS.some((g) => r.apiVersion === `${g}/${this.o.version}`)) {
      throw new Error(`the answer has apiVersion ${JSON.stringify(r.apiVersion)}, want authorization.svc.io/${this.o.version}`);
    }
    const status = r.status ?? {};
    if (status === null || typeof status !== 'object' || Array.isArray(status)) throw new Error('unable to decode the answer: status is not an object');
    const s = status as Record<string, unknown>;
    const field = <T>(name: string, type: 'boolean' | 'string', zero: T): T => {
      const v = s[name];
      if (v === undefined || v === null) return zero;
      if (typeof v !== type) throw new Error(`unable to decode the answer: status.${name} is a ${typeof v}, want ${type === 'boolean' ? 'bool' : 'string'}`);
      return v as T;
    };
    return { allowed: field('allowed', 'boolean', false), denied: field('denied', 'boolean', false), reason: field('reason', 'string', ''), evaluationError: field('evaluationError', 'string', '') };
  }
}

function describe(err: unknown, url: URL, timeoutMs: number): Error {
  if (err instanceof WebhookTimeoutError) return new Error(describeCall('POST', url, new Error(`context deadline exceeded (timeout ${timeoutMs}ms)`)));
  return new Error(describeCall('POST', url, err));
}

function decisionOf(s: ReviewStatus): AuthorizerDecision {
  if (s.allowed && s.denied) return { decision: 'deny', reason: s.reason, error: 'webhook subject access review returned both allow and deny response' };
  if (s.denied) return { decision: 'deny', reason: s.reason };
  if (s.allowed) return { decision: 'allow', reason: s.reason };
  return { decision: 'no-opinion', reason: s.reason };
}
