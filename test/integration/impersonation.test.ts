/**
 * Impersonation over real HTTP/1.1 and HTTP/2: a caller without the impersonate verb gets upstream's
 * 403 (AlwaysDeny), a caller with it (system:masters) is served as the impersonated user, every
 * Impersonate-Group header is one group (commas and all), extra keys are %-decoded, and the
 * impersonated user is what authorization then judges.
 */
import { connect } from 'node:http2';
import t from 'tap';
import { expectStatus, startSeeded } from '../helpers/fixtures.js';
import { ALICE_TOKEN, ADMIN_TOKEN } from '../helpers/server.js';

const WHOAMI = '/apis/authentication.svc.io/v1/selfsubjectreviews';

t.test('impersonation under AlwaysDeny (only system:masters may impersonate)', async (t) => {
  const s = await startSeeded(['--authorization-mode=AlwaysDeny']);
  t.teardown(() => s.stop());
  const alice = s.anon.with({ token: ALICE_TOKEN });

  t.test('a caller who may not impersonate gets upstream\'s 403', async (t) => {
    const r = await alice.get('/api/v1/namespaces', { headers: { 'impersonate-user': 'bob' } });
    expectStatus(t, r, 403, 'Forbidden', 'users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope: Everything is forbidden.');
    t.same(r.json.details, { name: 'bob', kind: 'users' });
    const sa = await alice.get('/api/v1/namespaces', { headers: { 'impersonate-user': 'system:serviceaccount:default:default' } });
    expectStatus(t, sa, 403, 'Forbidden', /^serviceaccounts "default" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "default"/);
  });

  t.test('system:masters may impersonate; the request is then judged as the impersonated user', async (t) => {
    const r = await s.admin.get('/api/v1/namespaces', { headers: { 'impersonate-user': 'bob', 'impersonate-group': 'dev' } });
    expectStatus(t, r, 403, 'Forbidden', 'namespaces is forbidden: User "bob" cannot list resource "namespaces" in API group "" at the cluster scope: Everything is forbidden.');
    const asMaster = await s.admin.get('/api/v1/namespaces', { headers: { 'impersonate-user': 'carol', 'impersonate-group': 'system:masters' } });
    t.equal(asMaster.status, 200, 'impersonating a system:masters member is allowed everything');
  });

  t.test('groups without a user are a 400, not a 500', async (t) => {
    expectStatus(t, await s.admin.get('/api/v1/namespaces', { headers: { 'impersonate-group': 'dev' } }), 400, 'BadRequest', /without impersonating a user$/);
  });
});

t.test('impersonated identities as SelfSubjectReview shows them (AlwaysAllow)', async (t) => {
  const s = await startSeeded(['--authorization-mode=AlwaysAllow']);
  t.teardown(() => s.stop());

  t.test('HTTP/1.1: every header value counts', async (t) => {
    const { request } = await import('node:https');
    // raw header list: two Impersonate-Group headers, one of them with a comma, and a %-encoded extra key
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(
        new URL(WHOAMI, s.url),
        {
          method: 'POST',
          ca: s.ca,
          headers: [
            // a raw header list is sent as is: HTTP/1.1 needs its Host header
            'host', new URL(s.url).host,
            'authorization', `Bearer ${ADMIN_TOKEN}`,
            'content-type', 'application/json',
            'impersonate-user', 'bob',
            'impersonate-uid', 'u-9',
            'impersonate-group', 'team a, team b',
            'impersonate-group', 'ops',
            'Impersonate-Extra-Example.com%2Fscope', 'read',
            'impersonate-extra-example.com%2fscope', 'write',
          ] as unknown as Record<string, string>,
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c));
          res.on('end', () => resolve(text));
        },
      );
      req.on('error', reject);
      req.end('{}');
    });
    t.same(JSON.parse(body).status.userInfo, {
      username: 'bob',
      uid: 'u-9',
      groups: ['team a, team b', 'ops', 'system:authenticated'],
      extra: { 'example.com/scope': ['read', 'write'] },
    });
  });

  t.test('HTTP/2: the same', async (t) => {
    const session = connect(s.url, { ca: s.ca });
    t.teardown(() => session.close());
    const stream = session.request(
      {
        ':method': 'POST',
        ':path': WHOAMI,
        authorization: `Bearer ${ADMIN_TOKEN}`,
        'content-type': 'application/json',
        'impersonate-user': 'system:serviceaccount:default:robot',
        'impersonate-group': ['x', 'y'],
      },
    );
    stream.end('{}');
    let text = '';
    stream.on('data', (c: Buffer) => (text += c));
    await new Promise((r) => stream.on('end', r));
    t.same(JSON.parse(text).status.userInfo, { username: 'system:serviceaccount:default:robot', groups: ['x', 'y', 'system:authenticated'] });
  });
});
