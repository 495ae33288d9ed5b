/**
 * Bootstrap tokens on a real server: the authenticator over bootstrap-token-<id> Secrets of
 * svc-system (every rule of the spec and of upstream's authenticator, table-driven), the token cleaner
 * deleting expired token Secrets, and the bootstrap signer keeping cluster-info in svc-public signed
 * for each signing token, verified exactly as the access-control spec tells a client to.
 */
import { compactVerify } from 'jose';
import t from 'tap';
import { startSeeded } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** These tests are about who the caller is, not what they may do: any identity is let through. */
const ALLOW_ALL = '--authorization-mode=AlwaysAllow';

const SECRETS = '/api/v1/namespaces/svc-system/secrets';
const CLUSTER_INFO = '/api/v1/namespaces/svc-public/configmaps/cluster-info';
const WHOAMI = '/apis/authentication.svc.io/v1/selfsubjectreviews';

const inSeconds = (s: number): string => new Date(Date.now() + s * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

function tokenSecret(id: string, secret: string, data: Record<string, string> = {}, o: { name?: string; type?: string; namespace?: string } = {}) {
  return {
    metadata: { name: o.name ?? `bootstrap-token-${id}`, ...(o.namespace ? { namespace: o.namespace } : {}) },
    type: o.type ?? 'bootstrap.svc.io/token',
    stringData: { 'token-id': id, 'token-secret': secret, 'usage-bootstrap-authentication': 'true', ...data },
  };
}

async function create(s: TestServer, body: ReturnType<typeof tokenSecret>, ns = 'svc-system'): Promise<void> {
  const r = await s.admin.post(`/api/v1/namespaces/${ns}/secrets`, body);
  if (r.status !== 201) throw new Error(`${r.status} ${r.text}`);
}

/** The spec's client check: base64url(kubeconfig) between the two dots, HS256 keyed with the full token, nothing but HS256. */
async function verifiesAsTheSpecSays(kubeconfig: string, jws: string, token: string): Promise<boolean> {
  const [header, empty, signature] = jws.split('.');
  if (empty !== '') return false;
  const payload = Buffer.from(kubeconfig, 'utf8').toString('base64').replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_');
  try {
    await compactVerify(`${header}.${payload}.${signature}`, Buffer.from(token), { algorithms: ['HS256'] });
    return true;
  } catch {
    return false;
  }
}

t.test('bootstrap token authentication', async (t) => {
  const s = await startSeeded([ALLOW_ALL, '--enable-bootstrap-token-auth']);
  t.teardown(() => s.stop());
  const rows: [string, ReturnType<typeof tokenSecret> | undefined, string, string | undefined, string?][] = [
    ['a valid token', tokenSecret('aaaaaa', 'aaaaaaaaaaaaaaaa'), 'aaaaaa.aaaaaaaaaaaaaaaa', 'system:bootstrap:aaaaaa'],
    ['extra groups (sorted, once each)', tokenSecret('bbbbbb', 'bbbbbbbbbbbbbbbb', { 'auth-extra-groups': 'system:bootstrappers:z,system:bootstrappers:a,system:bootstrappers:z' }), 'bbbbbb.bbbbbbbbbbbbbbbb', 'system:bootstrap:bbbbbb', 'system:bootstrappers,system:bootstrappers:a,system:bootstrappers:z,system:authenticated'],
    ['an expiration still ahead', tokenSecret('cccccc', 'cccccccccccccccc', { expiration: inSeconds(3600) }), 'cccccc.cccccccccccccccc', 'system:bootstrap:cccccc'],
    ['an expiration with an offset', tokenSecret('c2cccc', 'cccccccccccccccc', { expiration: '2999-01-01T00:00:00+02:00' }), 'c2cccc.cccccccccccccccc', 'system:bootstrap:c2cccc'],
    ['expired', tokenSecret('dddddd', 'dddddddddddddddd', { expiration: inSeconds(-60) }), 'dddddd.dddddddddddddddd', undefined],
    ['an unparsable expiration counts as expired', tokenSecret('d2dddd', 'dddddddddddddddd', { expiration: 'tomorrow' }), 'd2dddd.dddddddddddddddd', undefined],
    ['not marked for authentication', tokenSecret('eeeeee', 'eeeeeeeeeeeeeeee', { 'usage-bootstrap-authentication': 'false' }), 'eeeeee.eeeeeeeeeeeeeeee', undefined],
    ['the wrong secret', tokenSecret('ffffff', 'ffffffffffffffff'), 'ffffff.0000000000000000', undefined],
    ['token-id in the data differs from the name', tokenSecret('gggggg', 'gggggggggggggggg', { 'token-id': 'hhhhhh' }), 'gggggg.gggggggggggggggg', undefined],
    ['a Secret of another type', tokenSecret('iiiiii', 'iiiiiiiiiiiiiiii', {}, { type: 'Opaque' }), 'iiiiii.iiiiiiiiiiiiiiii', undefined],
    ['an extra group outside system:bootstrappers:', tokenSecret('jjjjjj', 'jjjjjjjjjjjjjjjj', { 'auth-extra-groups': 'system:masters' }), 'jjjjjj.jjjjjjjjjjjjjjjj', undefined],
    ['an extra group that ends in a colon', tokenSecret('j2jjjj', 'jjjjjjjjjjjjjjjj', { 'auth-extra-groups': 'system:bootstrappers:x:' }), 'j2jjjj.jjjjjjjjjjjjjjjj', undefined],
    ['a Secret in another namespace', tokenSecret('kkkkkk', 'kkkkkkkkkkkkkkkk', {}, { namespace: 'default' }), 'kkkkkk.kkkkkkkkkkkkkkkk', undefined],
    ['no Secret at all', undefined, 'llllll.llllllllllllllll', undefined],
    ['upper case is not a bootstrap token', tokenSecret('mmmmmm', 'mmmmmmmmmmmmmmmm'), 'MMMMMM.MMMMMMMMMMMMMMMM', undefined],
    ['a short secret is not a bootstrap token', tokenSecret('nnnnnn', 'nnnnnnnnnnnnnnnn'), 'nnnnnn.nnnnnnnnnnnnnnn', undefined],
  ];
  for (const [, body] of rows) if (body) await create(s, body, body.metadata.namespace ?? 'svc-system');
  for (const [rule, , token, user, groups] of rows) {
    const r = await s.anon.with({ token }).post(WHOAMI, {});
    if (user) {
      t.equal(r.status, 201, `${rule}: accepted`);
      t.equal(r.json?.status?.userInfo?.username, user, `${rule}: ${user}`);
      t.equal(r.json?.status?.userInfo?.groups.join(','), groups ?? 'system:bootstrappers,system:authenticated', `${rule}: groups`);
      t.notOk(r.json?.status?.userInfo?.uid, `${rule}: no uid, as upstream`);
    } else {
      t.equal(r.status, 401, `${rule}: 401, never anonymous`);
    }
  }
  t.test('a Secret being deleted no longer authenticates', async (t) => {
    await create(s, { ...tokenSecret('oooooo', 'oooooooooooooooo'), metadata: { name: 'bootstrap-token-oooooo', finalizers: ['example.com/hold'] } } as ReturnType<typeof tokenSecret>);
    const c = s.anon.with({ token: 'oooooo.oooooooooooooooo' });
    t.equal((await c.post(WHOAMI, {})).status, 201);
    await s.admin.delete(`${SECRETS}/bootstrap-token-oooooo`);
    t.equal((await c.post(WHOAMI, {})).status, 401);
    await s.admin.patch(`${SECRETS}/bootstrap-token-oooooo`, { metadata: { finalizers: null } }, 'application/merge-patch+json');
  });
  t.test('the Secret is accepted on write as upstream accepts it; the spec\'s rules come back as warnings', async (t) => {
    const r = await s.admin.post(SECRETS, tokenSecret('pppppp', 'short', { 'auth-extra-groups': 'nope' }, { name: 'bootstrap-token-other' }));
    t.equal(r.status, 201);
    t.match(String(r.headers.warning), 'must be \\"bootstrap-token-pppppp\\"');
    t.match(String(r.headers.warning), 'must be 16 lowercase alphanumeric characters');
    t.match(String(r.headers.warning), 'must start with \\"system:bootstrappers:\\"');
  });
});

t.test('without --enable-bootstrap-token-auth a bootstrap token is refused', async (t) => {
  const s = await startSeeded([ALLOW_ALL]);
  t.teardown(() => s.stop());
  await create(s, tokenSecret('aaaaaa', 'aaaaaaaaaaaaaaaa'));
  t.equal((await s.anon.with({ token: 'aaaaaa.aaaaaaaaaaaaaaaa' }).post(WHOAMI, {})).status, 401);
});

t.test('token cleaner and bootstrap signer', async (t) => {
  const s = await startSeeded([ALLOW_ALL, '--enable-bootstrap-token-auth', '--controllers=*,tokencleaner,bootstrapsigner']);
  t.teardown(() => s.stop());
  const clusterInfo = async () => (await s.admin.get(CLUSTER_INFO)).json?.data as Record<string, string> | undefined;

  t.test('cluster-info holds a kubeconfig naming this server and its CA', async (t) => {
    t.ok(await waitFor(async () => (await clusterInfo())?.kubeconfig !== undefined), 'created');
    const kubeconfig = (await clusterInfo())!.kubeconfig!;
    t.match(kubeconfig, `server: ${s.url}\n`);
    const ca = /certificate-authority-data: (\S+)/.exec(kubeconfig)![1]!;
    t.equal(Buffer.from(ca, 'base64').toString(), s.ca);
    t.equal((await s.anon.get(CLUSTER_INFO)).status, 200, 'readable before a client trusts anything (AlwaysAllow here; RBAC grants anonymous get on it)');
  });

  t.test('each signing token signs the kubeconfig, verifiable exactly as the spec says', async (t) => {
    await create(s, tokenSecret('sig001', 'aaaaaaaaaaaaaaaa', { 'usage-bootstrap-signing': 'true' }));
    await create(s, tokenSecret('sig002', 'bbbbbbbbbbbbbbbb', { 'usage-bootstrap-signing': 'true', 'usage-bootstrap-authentication': 'false' }));
    await create(s, tokenSecret('nosig1', 'cccccccccccccccc'));
    t.ok(await waitFor(async () => !!(await clusterInfo())?.['jws-kubeconfig-sig002']));
    const data = (await clusterInfo())!;
    t.same(Object.keys(data).sort(), ['jws-kubeconfig-sig001', 'jws-kubeconfig-sig002', 'kubeconfig'], 'a signature per signing token, none for the others');
    t.ok(await verifiesAsTheSpecSays(data.kubeconfig!, data['jws-kubeconfig-sig001']!, 'sig001.aaaaaaaaaaaaaaaa'), 'verifies with the full token');
    t.ok(await verifiesAsTheSpecSays(data.kubeconfig!, data['jws-kubeconfig-sig002']!, 'sig002.bbbbbbbbbbbbbbbb'));
    t.notOk(await verifiesAsTheSpecSays(data.kubeconfig!, data['jws-kubeconfig-sig001']!, 'aaaaaaaaaaaaaaaa'), 'not with the secret alone');
    t.notOk(await verifiesAsTheSpecSays(`${data.kubeconfig!} `, data['jws-kubeconfig-sig001']!, 'sig001.aaaaaaaaaaaaaaaa'), 'not for other content');
    t.same(JSON.parse(Buffer.from(data['jws-kubeconfig-sig001']!.split('.')[0]!, 'base64url').toString()), { alg: 'HS256', kid: 'sig001' });
  });

  t.test('a kubeconfig an administrator writes is kept and signed', async (t) => {
    const live = (await s.admin.get(CLUSTER_INFO)).json;
    const edited = `${live.data.kubeconfig}# edited\n`;
    const r = await s.admin.put(CLUSTER_INFO, { ...live, data: { ...live.data, kubeconfig: edited } });
    t.equal(r.status, 200, r.text);
    t.ok(await waitFor(async () => {
      const d = (await clusterInfo())!;
      return d.kubeconfig === edited && (await verifiesAsTheSpecSays(edited, d['jws-kubeconfig-sig001']!, 'sig001.aaaaaaaaaaaaaaaa'));
    }), 'signatures follow the new content');
  });

  t.test('a deleted token\'s signature goes', async (t) => {
    await s.admin.delete(`${SECRETS}/bootstrap-token-sig002`);
    t.ok(await waitFor(async () => (await clusterInfo())?.['jws-kubeconfig-sig002'] === undefined));
    t.ok((await clusterInfo())?.['jws-kubeconfig-sig001'], 'the others stay');
  });

  t.test('a token that expires: refused, unsigned and deleted when its time comes', async (t) => {
    await create(s, tokenSecret('exp001', 'eeeeeeeeeeeeeeee', { expiration: inSeconds(2), 'usage-bootstrap-signing': 'true' }));
    const c = s.anon.with({ token: 'exp001.eeeeeeeeeeeeeeee' });
    t.equal((await c.post(WHOAMI, {})).status, 201, 'valid before its expiration');
    t.ok(await waitFor(async () => !!(await clusterInfo())?.['jws-kubeconfig-exp001']), 'signed while valid');
    t.ok(await waitFor(async () => (await c.post(WHOAMI, {})).status === 401, 5000), 'refused once expired');
    t.ok(await waitFor(async () => (await clusterInfo())?.['jws-kubeconfig-exp001'] === undefined, 5000), 'its signature removed');
    t.ok(await waitFor(async () => (await s.admin.get(`${SECRETS}/bootstrap-token-exp001`)).status === 404, 5000), 'its Secret deleted by the token cleaner');
  });

  t.test('the token cleaner deletes already expired tokens and leaves the rest', async (t) => {
    await create(s, tokenSecret('old001', 'aaaaaaaaaaaaaaaa', { expiration: inSeconds(-3600) }));
    await create(s, tokenSecret('bad001', 'aaaaaaaaaaaaaaaa', { expiration: 'never' }));
    await s.admin.post(SECRETS, { metadata: { name: 'not-a-token' }, stringData: { expiration: inSeconds(-3600) } });
    t.ok(await waitFor(async () => (await s.admin.get(`${SECRETS}/bootstrap-token-old001`)).status === 404), 'expired: deleted');
    t.ok(await waitFor(async () => (await s.admin.get(`${SECRETS}/bootstrap-token-bad001`)).status === 404), 'unparsable expiration: deleted, as upstream');
    t.equal((await s.admin.get(`${SECRETS}/not-a-token`)).status, 200, 'Secrets of other types are not touched');
    t.equal((await s.admin.get(`${SECRETS}/bootstrap-token-sig001`)).status, 200, 'tokens without expiration stay');
  });
});
