/**
 * Authentication webhook (--authentication-token-webhook-config-file): a bearer token is sent to a
 * remote service as a TokenReview (authentication.svc.io, --authentication-token-webhook-version
 * v1beta1 by default or v1) and its `status` decides: authenticated with `user`, or not (its `error`
 * then explains). Answers are cached for --authentication-token-webhook-cache-ttl (2m), decisions
 * both ways, never errors; concurrent requests with one token share one call. A call that fails
 * transiently (connection refused or reset, 429, 5xx) is retried with upstream's backoff (500 ms,
 * x1.5) while the deadline allows; a hanging or garbled answer fails the token within
 * --authentication-token-webhook-timeout, and only that request waits for it.
 */
import type { UserInfo } from '../api/types.js';
import { AuthenticationConfigError } from './authn-config.js';
import { ALL_AUTHENTICATED, AuthenticationError, type Authenticator, type AuthnRequest, bearerToken } from './authenticator.js';
import { TokenCache } from './token-cache.js';
import { describeCall, WEBHOOK_BACKOFF, WebhookClient, WebhookError, WebhookStatusError, withBackoff } from '../webhook/client.js';
import { loadWebhookKubeconfig, WebhookConfigError } from '../webhook/kubeconfig.js';

export const WEBHOOK_VERSIONS = ['v1', 'v1beta1'];
const ANSWER_GROUPS = ['authentication.svc.io', 'authentication.k8s.io'];

export interface WebhookOptions {
  authenticationTokenWebhookConfigFile: string;
  authenticationTokenWebhookVersion: string;
  authenticationTokenWebhookCacheTtlMs: number;
  authenticationTokenWebhookTimeoutMs: number;
}

export interface WebhookDeps {
  /** The API server's audiences (--api-audiences); when set, the review asks for them and the answer must match one. */
  apiAudiences?: readonly string[];
  onStop?: (fn: () => void) => void;
  log?: (msg: string) => void;
}

type Decision = { user: UserInfo } | { rejected: AuthenticationError };

/** Failures worth another attempt: the network's own errors, 429 and 5xx (not a timeout, not a 4xx). */
const isRetriable = (e: unknown): boolean => (e instanceof WebhookStatusError ? e.code === 429 || e.code >= 500 : !(e instanceof WebhookError));

function validUser(u: unknown): UserInfo | undefined {
  if (u === undefined || u === null) return { username: '', groups: [] };
  if (typeof u !== 'object' || Array.isArray(u)) return undefined;
  const { username = '', uid = '', groups = [], extra } = u as Record<string, unknown>;
  if (typeof username !== 'string' || typeof uid !== 'string' || !Array.isArray(groups) || !groups.every((g) => typeof g === 'string')) return undefined;
  const user: UserInfo = { username, groups: [...(groups as string[])] };
  if (uid) user.uid = uid;
  if (extra !== undefined && extra !== null) {
    if (typeof extra !== 'object' || Array.isArray(extra)) return undefined;
    const out: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(extra)) {
      if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) return undefined;
      out[k] = [...v];
    }
    if (Object.keys(out).length) user.extra = out;
  }
  return user;
}

export class WebhookTokenAuthenticator implements Authenticator {
  readonly name = 'webhook';
  private readonly cache = new TokenCache<Decision>(8192);
  private readonly inflight = new Map<string, Promise<UserInfo>>();

  constructor(
    private readonly url: URL,
    private readonly client: WebhookClient,
    private readonly version: string,
    private readonly ttlMs: number,
    private readonly timeoutMs: number,
    private readonly audiences: readonly string[],
    private readonly log: (m: string) => void,
  ) {}

  close(): void {
    this.client.close();
  }

  authenticate(req: AuthnRequest): UserInfo | null | Promise<UserInfo> {
    const token = bearerToken(req);
    if (token === undefined) return null;
    const hit = this.cache.get(token);
    if (hit) {
      if ('user' in hit) return hit.user;
      throw hit.rejected;
    }
    const pending = this.inflight.get(token);
    if (pending) return pending;
    const p = this.review(token).finally(() => this.inflight.delete(token));
    this.inflight.set(token, p);
    return p;
  }

  private async review(token: string): Promise<UserInfo> {
    let status: Record<string, unknown>;
    try {
      status = await this.call(token);
    } catch (e) {
      this.log(`Failed to make webhook authenticator request: ${(e as Error).message}`);
      throw new AuthenticationError(`webhook: ${(e as Error).message}`);
    }
    const decision = this.decide(status);
    if (decision instanceof AuthenticationError) throw decision;
    if (this.ttlMs > 0) this.cache.set(token, decision, Date.now() + this.ttlMs);
    if ('user' in decision) return decision.user;
    throw decision.rejected;
  }

  /** The decision of a well-formed answer; an AuthenticationError (not cached) when the webhook reported one. */
  private decide(status: Record<string, unknown>): Decision | AuthenticationError {
    if (this.audiences.length) {
      const got = Array.isArray(status.audiences) && status.audiences.length ? (status.audiences as unknown[]) : this.audiences;
      if (!got.some((a) => this.audiences.includes(a as string))) return { rejected: new AuthenticationError('webhook: token audiences do not match the API audiences') };
    }
    if (status.authenticated !== true) {
      if (typeof status.error === 'string' && status.error !== '') return new AuthenticationError(`webhook: ${status.error}`);
      return { rejected: new AuthenticationError('webhook: token not authenticated') };
    }
    const user = validUser(status.user)!;
    return { user: { ...user, groups: user.groups.includes(ALL_AUTHENTICATED) ? user.groups : [...user.groups, ALL_AUTHENTICATED] } };
  }

  /** Sends the review, retrying transient failures within the deadline; resolves to the answer's status. */
  private async call(token: string): Promise<Record<string, unknown>> {
    const deadline = Date.now() + this.timeoutMs;
    const body = {
      apiVersion: `authentication.svc.io/${this.version}`,
      kind: 'TokenReview',
      metadata: { creationTimestamp: null },
      spec: { token, ...(this.audiences.length ? { audiences: [...this.audiences] } : {}) },
      status: { user: {} },
    };
    let answer: Buffer;
    try {
      answer = await withBackoff((left) => this.client.post(body, left), { backoff: WEBHOOK_BACKOFF, retriable: isRetriable, deadline });
    } catch (e) {
      throw new WebhookError(describeCall('POST', this.url, e));
    }
    return this.statusOf(answer);
  }

  private statusOf(answer: Buffer): Record<string, unknown> {
    let v: unknown;
    try {
      v = JSON.parse(answer.toString('utf8'));
    } catch (e) {
      throw new WebhookError(`invalid TokenReview answer: ${(e as Error).message}`);
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new WebhookError('invalid TokenReview answer: not an object');
    const o = v as Record<string, unknown>;
    if (o.kind !== undefined && o.kind !== 'TokenReview') throw new WebhookError(`invalid TokenReview answer: kind ${JSON.stringify(o.kind)}`);
    if (o.apiVersion !== undefined && !ANSWER_GROUPS.some((g) => o.apiVersion === `${g}/${this.version}`)) {
      throw new WebhookError(`invalid TokenReview answer: apiVersion ${JSON.stringify(o.apiVersion)}, want authentication.svc.io/${this.version}`);
    }
    const status = o.status ?? {};
    if (typeof status !== 'object' || Array.isArray(status) || status === null) throw new WebhookError('invalid TokenReview answer: status is not an object');
    const s = status as Record<string, unknown>;
    if (s.authenticated !== undefined && typeof s.authenticated !== 'boolean') throw new WebhookError('invalid TokenReview answer: status.authenticated is not a boolean');
    if (s.authenticated === true && !validUser(s.user)) throw new WebhookError('invalid TokenReview answer: status.user is malformed');
    return s;
  }
}

/** Builds the method from the flags; configuration problems are start errors naming the file. */
export function webhookTokenAuthenticator(o: WebhookOptions, d: WebhookDeps): WebhookTokenAuthenticator {
  if (!WEBHOOK_VERSIONS.includes(o.authenticationTokenWebhookVersion)) {
    throw new AuthenticationConfigError(`unsupported authentication webhook version ${JSON.stringify(o.authenticationTokenWebhookVersion)}, supported versions are "v1", "v1beta1"`);
  }
  let target;
  try {
    target = loadWebhookKubeconfig(o.authenticationTokenWebhookConfigFile, { httpsOnly: true });
  } catch (e) {
    if (e instanceof WebhookConfigError) throw new AuthenticationConfigError(`--authentication-token-webhook-config-file: ${e.message}`);
    throw e;
  }
  const client = new WebhookClient(target, 1024 * 1024);
  const w = new WebhookTokenAuthenticator(
    target.url,
    client,
    o.authenticationTokenWebhookVersion,
    o.authenticationTokenWebhookCacheTtlMs,
    o.authenticationTokenWebhookTimeoutMs,
    d.apiAudiences ?? [],
    d.log ?? ((m) => console.error(`svc-apiserver: ${m}`)),
  );
  d.onStop?.(() => w.close());
  return w;
}
