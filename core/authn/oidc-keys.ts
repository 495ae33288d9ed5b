/**
 * An issuer's signing keys: OpenID discovery over HTTPS (`<issuer>/.well-known/openid-configuration`
 * or the configured discoveryURL; the discovered `issuer` must equal the configured one), then the
 * JWKS at its `jwks_uri`. Discovery runs in the background and retries every 10 s until it works, as
 * upstream does, so an unreachable provider never delays the server's start (its tokens are refused
 * meanwhile). A token signed with a key id the set does not know triggers one refetch; refetches
 * triggered that way are rate-limited and shared by concurrent callers, and a caller waits for one
 * only briefly, so a hanging provider costs a bounded wait, never a hang.
 */
import { createLocalJWKSet, errors as joseErrors, type JSONWebKeySet, type JWSHeaderParameters } from 'jose';
import { WebhookClient, WebhookError, type WebhookResponse } from '../webhook/client.js';

export interface IssuerKeysOptions {
  issuer: string;
  discoveryURL?: string;
  /** PEM CA bundle for the provider's certificate; the host's roots when empty. */
  ca?: string;
  /** Per-call HTTP deadline (upstream's client uses 30 s). */
  fetchTimeoutMs?: number;
  /** How long a verification waits for a key refetch before giving up. */
  refreshWaitMs?: number;
  /** Least time between two refetches triggered by unknown key ids. */
  refreshIntervalMs?: number;
  /** Delay between discovery attempts while the provider cannot be reached. */
  retryMs?: number;
  log?: (msg: string) => void;
}

type KeyLookup = ReturnType<typeof createLocalJWKSet>;
type VerifyKey = Awaited<ReturnType<KeyLookup>>;

export class KeysUnavailableError extends Error {}

export class IssuerKeys {
  private lookup: KeyLookup | undefined;
  private jwksURI = '';
  private readonly client: WebhookClient;
  private readonly fetchTimeoutMs: number;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private refreshing: Promise<void> | undefined;
  private lastKidRefresh = -Infinity;
  private readyWaiters: (() => void)[] = [];
  /** Why the last discovery or key fetch failed, for logs and tests. */
  lastError = '';

  constructor(private readonly o: IssuerKeysOptions) {
    this.client = new WebhookClient({ httpsOnly: true, ...(o.ca ? { ca: o.ca } : {}) }, 1024 * 1024);
    this.fetchTimeoutMs = o.fetchTimeoutMs ?? 30_000;
  }

  get ready(): boolean {
    return this.lookup !== undefined;
  }

  /** Starts discovery in the background (retrying until it works or close()). */
  start(): this {
    void this.attempt();
    return this;
  }

  /** Resolves once the keys are known (or never, if the provider never answers). */
  whenReady(): Promise<void> {
    if (this.ready) return Promise.resolve();
    return new Promise((r) => this.readyWaiters.push(r));
  }

  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.client.close();
  }

  /** The verification key for a token's header, refetching the set once if the key id is unknown. */
  async keyFor(header: JWSHeaderParameters): Promise<VerifyKey | VerifyKey[]> {
    const lookup = this.lookup;
    if (!lookup) throw new KeysUnavailableError('oidc: authenticator not initialized');
    try {
      return await this.select(lookup, header);
    } catch (e) {
      if (!(e instanceof joseErrors.JWKSNoMatchingKey)) throw e;
    }
    await this.refreshForUnknownKey();
    return this.select(this.lookup!, header);
  }

  private async select(lookup: KeyLookup, header: JWSHeaderParameters): Promise<VerifyKey | VerifyKey[]> {
    try {
      return await lookup(header);
    } catch (e) {
      // no key id and several keys of the type: every one is a candidate, as go-oidc tries them all
      if (e instanceof joseErrors.JWKSMultipleMatchingKeys) {
        const keys: VerifyKey[] = [];
        for await (const k of e as unknown as AsyncIterable<VerifyKey>) keys.push(k);
        return keys;
      }
      throw e;
    }
  }

  private async refreshForUnknownKey(): Promise<void> {
    const now = Date.now();
    if (!this.refreshing) {
      if (now - this.lastKidRefresh < (this.o.refreshIntervalMs ?? 10_000)) return;
      this.lastKidRefresh = now;
      this.refreshing = this.fetchKeys().finally(() => (this.refreshing = undefined));
    }
    let timer: NodeJS.Timeout | undefined;
    const waitMs = this.o.refreshWaitMs ?? 5_000;
    const timedOut = new Promise<never>((_, rej) => {
      timer = setTimeout(() => rej(new KeysUnavailableError(`fetching keys: no answer from ${this.jwksURI} within ${waitMs}ms`)), waitMs);
    });
    try {
      await Promise.race([this.refreshing, timedOut]);
    } catch (e) {
      throw e instanceof KeysUnavailableError ? e : new KeysUnavailableError(`fetching keys: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  private async attempt(): Promise<void> {
    if (this.closed) return;
    try {
      await this.discover();
      await this.fetchKeys();
      this.lastError = '';
      for (const w of this.readyWaiters.splice(0)) w();
    } catch (e) {
      this.lastError = (e as Error).message;
      this.o.log?.(`oidc authenticator: initializing plugin: ${this.lastError}`);
      if (!this.closed) {
        this.retryTimer = setTimeout(() => void this.attempt(), this.o.retryMs ?? 10_000);
        this.retryTimer.unref();
      }
    }
  }

  private async discover(): Promise<void> {
    const url = this.o.discoveryURL || `${this.o.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    const r = await this.fetch(url);
    if (r.status !== 200) throw new WebhookError(`${r.status} ${r.body.toString('utf8').slice(0, 200)}`);
    const doc = jsonBody(r, 'oidc: failed to decode provider discovery object') as { issuer?: unknown; jwks_uri?: unknown };
    if (doc.issuer !== this.o.issuer) {
      throw new WebhookError(`oidc: issuer did not match the issuer returned by provider, expected ${JSON.stringify(this.o.issuer)} got ${JSON.stringify(doc.issuer)}`);
    }
    if (typeof doc.jwks_uri !== 'string' || !doc.jwks_uri) throw new WebhookError('oidc: provider discovery document has no jwks_uri');
    this.jwksURI = doc.jwks_uri;
  }

  private async fetchKeys(): Promise<void> {
    const r = await this.fetch(this.jwksURI);
    if (r.status !== 200) throw new WebhookError(`oidc: get keys failed: ${r.status} ${r.body.toString('utf8').slice(0, 200)}`);
    const set = jsonBody(r, 'oidc: failed to decode keys') as JSONWebKeySet;
    try {
      this.lookup = createLocalJWKSet(set);
    } catch (e) {
      throw new WebhookError(`oidc: failed to decode keys: ${(e as Error).message}`);
    }
  }

  /** A GET of one of the provider's documents (https only: the client refuses plain http). */
  private fetch(url: string): Promise<WebhookResponse> {
    return this.client.get(url, this.fetchTimeoutMs).catch((e: Error) => {
      throw new WebhookError(`GET ${url}: ${e.message}`);
    });
  }
}

/** Parses a JSON answer, or says why it is not one. */
function jsonBody(r: WebhookResponse, what: string): unknown {
  try {
    return JSON.parse(r.body.toString('utf8'));
  } catch (e) {
    throw new WebhookError(`${what}: answer is not JSON (${(e as Error).message})`);
  }
}
