/**
 * GET one object with each kind of credential, on one server that has them all configured, so the
 * rows differ only in how the caller is authenticated: a static token (the baseline), a client
 * certificate, a service account JWT (TokenRequest) and an OIDC ID token from a real provider on
 * loopback (each JWT verified once, then answered from the token cache). Rounds alternate the
 * credentials so drift in the machine's load hits every row alike. Target: every JWT path at least
 * 90% of the static-token rate.
 */
import { issueClientCert } from '../../core/server/certs.js';
import { TestOidcProvider } from '../../test/helpers/oidc-provider.js';
import { tmp } from '../../test/helpers/fixtures.js';
import { request } from 'node:https';
import { AUTH, load, type LoadResult, type Mode, SetupClient, startApiServer } from '../lib.js';

export interface AuthnRow {
  credential: string;
  result: LoadResult;
  /** Rate as a share of the static-token rate, in percent. */
  ofStatic: number;
}

const OBJECT = '/apis/storage.svc.io/v1/csidrivers/bench.csi.example.com';
/** Short alternating rounds: each round's ratio compares loads run moments apart, and the median of them resists the machine's drift. */
const ROUNDS = 4;

function getStatus(url: string, ca: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(OBJECT, url), { ca, headers: { authorization: `Bearer ${token}` }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

async function serviceAccountToken(c: SetupClient): Promise<string> {
  // the default ServiceAccount is made by its controller just after start
  for (let i = 0; i < 100; i++) {
    const r = await c.send('POST', '/api/v1/namespaces/default/serviceaccounts/default/token', { spec: {} });
    if (r.status === 201) return (JSON.parse(r.text) as { status: { token: string } }).status.token;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error('no service account token');
}

export async function getOneByCredential(mode: Mode, duration: number): Promise<AuthnRow[]> {
  const idp = await TestOidcProvider.start(tmp('svc-bench-oidc-'), { accounts: { alice: { email: 'alice@example.com', email_verified: true, groups: ['system:masters'] } } });
  // AlwaysAllow: the rows differ only in authentication (a service account is never in
  // system:masters, which the other credentials are; RBAC's cost is the rbac scenario's)
  const s = await startApiServer([
    ...mode.flags,
    '--authorization-mode=AlwaysAllow',
    `--oidc-issuer-url=${idp.issuer}`,
    '--oidc-client-id=svc',
    `--oidc-ca-file=${idp.caFile}`,
    '--oidc-username-claim=email',
    '--oidc-groups-claim=groups',
  ]);
  try {
    const c = new SetupClient(s.url, s.ca);
    await c.send('POST', '/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'bench.csi.example.com' }, spec: { attachRequired: true } });
    const jwt = await serviceAccountToken(c);
    const idToken = await idp.login('alice');
    // discovery runs in the background after the start: wait until the token is accepted
    for (let i = 0; i < 200 && (await getStatus(s.url, s.ca, idToken)) !== 200; i++) await new Promise((res) => setTimeout(res, 100));
    c.close();
    const cert = issueClientCert(s.dir, 'bench-cert', ['system:masters']);
    const credentials: [string, Record<string, string>, { cert?: string; key?: string }][] = [
      ['static token', AUTH, {}],
      ['client certificate', {}, { cert: cert.cert, key: cert.key }],
      ['service account JWT', { authorization: `Bearer ${jwt}` }, {}],
      ['OIDC ID token', { authorization: `Bearer ${idToken}` }, {}],
    ];
    const runs = new Map<string, LoadResult[]>(credentials.map(([name]) => [name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [credential, headers, tls] of credentials) {
        runs.get(credential)!.push(await load({ url: `${s.url}${OBJECT}`, headers, duration: Math.max(2, Math.round(duration / 2)), tlsOptions: { ca: s.ca, ...tls } }));
      }
    }
    const mean = (xs: LoadResult[], f: (r: LoadResult) => number): number => xs.reduce((a, r) => a + f(r), 0) / xs.length;
    const median = (xs: number[]): number => {
      const v = [...xs].sort((a, b) => a - b);
      return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
    };
    const statics = runs.get('static token')!;
    const rows: AuthnRow[] = [];
    for (const [credential] of credentials) {
      const xs = runs.get(credential)!;
      const result = { rps: mean(xs, (r) => r.rps), p50: mean(xs, (r) => r.p50), p99: mean(xs, (r) => r.p99), errors: mean(xs, (r) => r.errors), non2xx: mean(xs, (r) => r.non2xx) };
      // the median of each round's ratio to the static token measured in that same round
      rows.push({ credential, result, ofStatic: median(xs.map((r, i) => (100 * r.rps) / statics[i]!.rps)) });
    }
    return rows;
  } finally {
    await s.stop();
    await idp.stop();
  }
}
