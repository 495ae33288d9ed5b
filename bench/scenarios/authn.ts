/**
 * What each credential costs on the fastest path: GET one CSIDriver on one server, with a static
 * token, a client certificate, and a service account JWT (verified once, then answered from the
 * token cache). The JWT row is compared with the static token row (target: at least 90%).
 */
import { issueClientCert } from '../../core/server/certs.js';
import { AUTH, load, type LoadResult, type Mode, SetupClient, startApiServer } from '../lib.js';

export interface AuthnRow {
  credential: string;
  result: LoadResult;
}

const PATH = '/apis/storage.svc.io/v1/csidrivers/bench.csi.example.com';

export async function getByCredential(mode: Mode, duration: number): Promise<AuthnRow[]> {
  const s = await startApiServer(mode.flags);
  try {
    const c = new SetupClient(s.url, s.ca);
    await c.send('POST', '/apis/storage.svc.io/v1/csidrivers', { metadata: { name: 'bench.csi.example.com' } });
    // the default ServiceAccount is made by its controller just after start
    let jwt = '';
    for (let i = 0; i < 100 && !jwt; i++) {
      const r = await c.send('POST', '/api/v1/namespaces/default/serviceaccounts/default/token', { spec: {} });
      if (r.status === 201) jwt = (JSON.parse(r.text) as { status: { token: string } }).status.token;
      else await new Promise((res) => setTimeout(res, 50));
    }
    c.close();
    if (!jwt) throw new Error('no service account token');
    const cert = issueClientCert(s.dir, 'bench-cert', ['system:masters']);
    const url = `${s.url}${PATH}`;
    const rows: AuthnRow[] = [];
    rows.push({ credential: 'static token', result: await load({ url, headers: AUTH, duration, tlsOptions: { ca: s.ca } }) });
    rows.push({ credential: 'client certificate', result: await load({ url, duration, tlsOptions: { ca: s.ca, cert: cert.cert, key: cert.key } }) });
    rows.push({ credential: 'service account JWT', result: await load({ url, headers: { authorization: `Bearer ${jwt}` }, duration, tlsOptions: { ca: s.ca } }) });
    return rows;
  } finally {
    await s.stop();
  }
}
