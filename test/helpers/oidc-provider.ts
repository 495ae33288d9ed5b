/**
 * A real OpenID provider (the oidc-provider package) served over HTTPS on loopback, with its own CA,
 * for the OIDC tests. ID tokens come from a real authorization-code flow (the provider's development
 * login and consent pages, driven over HTTP with cookies and PKCE), never hand-made; `sign` exists
 * only for the bad-input cases (expired, wrong audience, wrong key, ...). The provider's signing key
 * can be rotated, and discovery or the key set can be made to hang or counted.
 */
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { exportJWK, type JWK, SignJWT } from 'jose';
import Provider from 'oidc-provider';
import { type CA, sharedLoopbackPki } from './pki.js';

export interface ClientSpec {
  client_id: string;
  client_secret?: string;
  id_token_signed_response_alg?: string;
}

export interface ProviderOptions {
  /** Claims of each account, by account id (the id is the `sub` unless given). */
  accounts: Record<string, Record<string, unknown>>;
  clients?: ClientSpec[];
  /** Key type of the signing keys. */
  keyType?: 'RSA' | 'EC';
  /** ID token lifetime in seconds. */
  idTokenTtl?: number;
}

const REDIRECT = 'https://127.0.0.1/cb';
const secretOf = (c: ClientSpec): string => c.client_secret ?? `${c.client_id}-secret`;

async function newSigningKey(type: 'RSA' | 'EC', kid: string): Promise<JWK> {
  const { privateKey } = type === 'EC' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...(await exportJWK(privateKey)), kid, use: 'sig', alg: type === 'EC' ? 'ES256' : 'RS256' };
}

export class TestOidcProvider {
  readonly ca: CA;
  readonly caFile: string;
  issuer = '';
  /** Requests seen per path (`/.well-known/openid-configuration`, `/jwks`, ...). */
  readonly requests = new Map<string, number>();
  /** Paths whose requests are held unanswered until stop(). */
  readonly hanging = new Set<string>();
  keys: JWK[] = [];
  private provider!: Provider;
  private server!: Server;
  private readonly sockets = new Set<Socket>();
  private keyCount = 0;

  private constructor(
    dir: string,
    private readonly o: ProviderOptions,
  ) {
    this.ca = sharedLoopbackPki().ca;
    this.caFile = join(dir, `oidc-ca-${randomBytes(4).toString('hex')}.crt`);
    writeFileSync(this.caFile, this.ca.cert);
  }

  static async start(dir: string, o: ProviderOptions): Promise<TestOidcProvider> {
    const p = new TestOidcProvider(dir, o);
    const serving = sharedLoopbackPki().serving;
    p.server = createServer({ cert: serving.cert, key: serving.key }, (req, res) => p.handle(req, res));
    p.server.on('connection', (s: Socket) => {
      p.sockets.add(s);
      s.on('close', () => p.sockets.delete(s));
    });
    await new Promise<void>((r) => p.server.listen(0, '127.0.0.1', r));
    p.issuer = `https://127.0.0.1:${(p.server.address() as { port: number }).port}`;
    p.keys = [await newSigningKey(o.keyType ?? 'RSA', p.nextKid())];
    p.provider = p.makeProvider();
    return p;
  }

  get clients(): ClientSpec[] {
    return this.o.clients ?? [{ client_id: 'svc', client_secret: 'svc-secret' }];
  }

  /** The key currently used to sign (first of the published set). */
  get signingKey(): JWK {
    return this.keys[0]!;
  }

  count(path: string): number {
    return this.requests.get(path) ?? 0;
  }

  /** Publishes a new signing key first (the old ones stay published) and signs with it from now on. */
  async rotate(): Promise<void> {
    this.keys = [await newSigningKey(this.o.keyType ?? 'RSA', this.nextKid()), ...this.keys];
    this.provider = this.makeProvider();
  }

  /** Logs `account` in through the authorization-code flow and returns the ID token it gets. */
  async login(account: string, opts: { client?: string; scope?: string } = {}): Promise<string> {
    const client = this.clients.find((c) => c.client_id === (opts.client ?? this.clients[0]!.client_id))!;
    const jar = new Map<string, string>();
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const q = new URLSearchParams({
      client_id: client.client_id,
      response_type: 'code',
      scope: opts.scope ?? 'openid email groups profile',
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: randomBytes(8).toString('hex'),
      nonce: randomBytes(8).toString('hex'),
    });
    let r = await this.call('GET', `/auth?${q}`, jar);
    for (let i = 0; i < 10 && r.location && !r.location.startsWith(REDIRECT); i++) {
      if (r.location.includes('/interaction/')) {
        const page = await this.call('GET', r.location, jar);
        const prompt = page.body.includes('name="login"') ? 'login' : 'consent';
        r = await this.call('POST', r.location, jar, prompt === 'login' ? `prompt=login&login=${encodeURIComponent(account)}&password=x` : 'prompt=consent');
      } else r = await this.call('GET', r.location, jar);
    }
    const code = r.location ? new URL(r.location).searchParams.get('code') : null;
    if (!code) throw new Error(`authorization flow did not return a code: ${r.status} ${r.location ?? ''} ${r.body.slice(0, 300)}`);
    const t = await this.call(
      'POST',
      '/token',
      new Map(),
      new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier }).toString(),
      `Basic ${Buffer.from(`${client.client_id}:${secretOf(client)}`).toString('base64')}`,
    );
    const tokens = JSON.parse(t.body) as { id_token?: string; error?: string; error_description?: string };
    if (!tokens.id_token) throw new Error(`token endpoint: ${t.status} ${tokens.error ?? ''} ${tokens.error_description ?? ''}`);
    return tokens.id_token;
  }

  /**
   * A token signed by hand with the provider's current key (or `key`), for bad-input tests: the
   * defaults are a valid token (iss, aud svc, sub, exp in an hour, iat now), overridable claim by claim.
   */
  async sign(claims: Record<string, unknown>, opts: { key?: JWK; alg?: string; kid?: string | null } = {}): Promise<string> {
    const key = opts.key ?? this.signingKey;
    const alg = opts.alg ?? (key.alg as string);
    const now = Math.floor(Date.now() / 1000);
    const payload = { iss: this.issuer, aud: this.clients[0]!.client_id, sub: 'alice', iat: now, exp: now + 3600, ...claims };
    for (const [k, v] of Object.entries(payload)) if (v === undefined) delete (payload as Record<string, unknown>)[k];
    const kid = opts.kid === null ? {} : { kid: opts.kid ?? key.kid };
    const { importJWK } = await import('jose');
    return new SignJWT(payload).setProtectedHeader({ alg, ...kid }).sign(await importJWK(key, alg));
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private nextKid(): string {
    return `key-${++this.keyCount}`;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0]!;
    this.requests.set(path, (this.requests.get(path) ?? 0) + 1);
    if (this.hanging.has(path)) return; // never answered; the socket is destroyed at stop()
    void this.provider.callback()(req, res);
  }

  private makeProvider(): Provider {
    const accounts = this.o.accounts;
    const ttl = this.o.idTokenTtl ?? 3600;
    return new Provider(this.issuer, {
      clients: this.clients.map((c) => ({
        client_id: c.client_id,
        client_secret: secretOf(c),
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        ...(c.id_token_signed_response_alg ? { id_token_signed_response_alg: c.id_token_signed_response_alg } : {}),
      })),
      jwks: { keys: this.keys as never },
      findAccount: (_ctx: unknown, id: string) => {
        const claims = accounts[id];
        if (!claims) return undefined;
        return { accountId: id, claims: () => ({ sub: id, ...claims }) };
      },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], groups: ['groups'], profile: ['name', 'preferred_username', 'hd', 'uid', 'roles', 'tenant'] },
      conformIdTokenClaims: false,
      cookies: { keys: ['svc-test-cookie-key'] },
      ttl: { IdToken: ttl, AccessToken: ttl, AuthorizationCode: 60, Interaction: 600, Session: 3600, Grant: 3600 },
      enabledJWA: { idTokenSigningAlgValues: ['RS256', 'PS256', 'ES256'] },
    } as never);
  }

  private call(method: string, path: string, jar: Map<string, string>, body?: string, authorization?: string): Promise<{ status: number; location?: string; body: string }> {
    const url = new URL(path, this.issuer);
    const headers: Record<string, string> = {};
    if (jar.size) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    if (authorization) headers.authorization = authorization;
    return new Promise((resolve, reject) => {
      const r = request(url, { method, ca: this.ca.cert, headers, agent: false }, (res) => {
        for (const c of res.headers['set-cookie'] ?? []) {
          const kv = c.split(';')[0]!;
          const i = kv.indexOf('=');
          jar.set(kv.slice(0, i), kv.slice(i + 1));
        }
        let b = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (b += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location ? new URL(res.headers.location, this.issuer).toString() : undefined, body: b }));
      });
      r.on('error', reject);
      r.end(body);
    });
  }
}
