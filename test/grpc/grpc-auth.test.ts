/**
 * Identity over gRPC goes through the same authenticators, impersonation and authorizers as over
 * HTTPS: a client certificate verified against the client CA, a bearer token in the `authorization`
 * metadata, impersonation metadata, and anonymous calls; refusals are UNAUTHENTICATED (401) and
 * PERMISSION_DENIED (403) carrying the same Status as the HTTPS answer. A certificate from a CA the
 * server does not trust identifies nobody.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { status as Code } from '@grpc/grpc-js';
import t from 'tap';
import { issueClientCert } from '../../core/server/certs.js';
import { ResourceClient, type Ref } from '../../core/grpc/client.js';
import type { Client } from '../helpers/client.js';
import { normalized, type Op, overGrpc, overHttps, startGrpcServer } from '../helpers/grpc.js';
import { makeCA } from '../helpers/pki.js';
import { ALICE_TOKEN } from '../helpers/server.js';

const REVIEW: Ref = { group: 'authentication.svc.io', version: 'v1', resource: 'selfsubjectreviews' };
const whoami: Op = { verb: 'create', ref: REVIEW, body: { apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' }, accept: 'application/json' };
const listCMs: Op = { verb: 'list', ref: { version: 'v1', resource: 'configmaps', namespace: 'default' } };

t.test('identity over gRPC is the HTTPS identity', async (t) => {
  const s = await startGrpcServer();
  t.teardown(() => s.stop());
  const both = async (h: Client, g: ResourceClient, op: Op) => {
    const [x, y] = [await overHttps(h, op), await overGrpc(g, op)];
    t.equal(y.code, x.code, `the same code (${y.code})`);
    t.same(normalized(y.value, '\0'), normalized(x.value, '\0'), 'the same body');
    return y;
  };
  const userOf = (v: { status: { userInfo: { username: string; groups: string[] } } }) => v.status.userInfo;

  await t.test('a client certificate signed by the client CA identifies its user', async (t) => {
    const { cert, key } = issueClientCert(s.dataDir, 'carol', ['team-x']);
    const r = await both(s.anon.with({ cert, key }), s.grpc({ token: undefined, cert, key }), whoami);
    t.equal(r.code, Code.OK);
    t.equal(userOf(r.value).username, 'carol');
    t.ok(userOf(r.value).groups.includes('team-x'));
  });

  await t.test('a bearer token in the authorization metadata identifies its user', async (t) => {
    const r = await both(s.anon.with({ token: ALICE_TOKEN }), s.grpc({ token: ALICE_TOKEN }), whoami);
    t.equal(userOf(r.value).username, 'alice');
    t.same(userOf(r.value).groups, ['dev', 'qa', 'system:authenticated']);
  });

  await t.test('an unknown token is UNAUTHENTICATED (401)', async (t) => {
    const r = await both(s.anon.with({ token: 'no-such-token' }), s.grpc({ token: 'no-such-token' }), listCMs);
    t.equal(r.code, Code.UNAUTHENTICATED);
    t.equal(r.value.code, 401);
  });

  await t.test('a user without permission is PERMISSION_DENIED (403) with the same Status', async (t) => {
    const r = await both(s.anon.with({ token: ALICE_TOKEN }), s.grpc({ token: ALICE_TOKEN }), listCMs);
    t.equal(r.code, Code.PERMISSION_DENIED);
    t.match(r.value.message, /User "alice" cannot list resource "configmaps"/);
  });

  await t.test('no credential is system:anonymous', async (t) => {
    const r = await both(s.anon, s.grpc({ token: undefined }), listCMs);
    t.equal(r.code, Code.PERMISSION_DENIED);
    t.match(r.value.message, /system:anonymous/);
  });

  await t.test('impersonation metadata acts as the named user, groups, uid and extra', async (t) => {
    const headers = { 'impersonate-user': 'bob', 'impersonate-group': 'ops', 'impersonate-uid': 'u-1', 'impersonate-extra-scopes': 'read' };
    const viaHttps = await s.admin.post('/apis/authentication.svc.io/v1/selfsubjectreviews', whoami.body, { headers });
    const g = s.grpc({ impersonate: { user: 'bob', groups: ['ops'], uid: 'u-1', extra: { scopes: ['read'] } } });
    const viaGrpc = await overGrpc(g, whoami);
    t.equal(viaGrpc.code, Code.OK);
    t.same(userOf(viaGrpc.value), userOf(viaHttps.json));
    t.same(userOf(viaGrpc.value), { username: 'bob', uid: 'u-1', groups: ['ops', 'system:authenticated'], extra: { scopes: ['read'] } });
  });

  await t.test('impersonation by a user who may not impersonate is PERMISSION_DENIED', async (t) => {
    const g = s.grpc({ token: ALICE_TOKEN, impersonate: { user: 'bob' } });
    const r = await overGrpc(g, listCMs);
    const h = await s.anon.with({ token: ALICE_TOKEN }).get('/api/v1/namespaces/default/configmaps', { headers: { 'impersonate-user': 'bob' } });
    t.equal(r.code, Code.PERMISSION_DENIED);
    t.equal(r.value.message, h.json.message);
  });

  await t.test('impersonating groups without a user is INVALID_ARGUMENT', async (t) => {
    const bad = await s.g.list(listCMs.ref, { metadata: { 'impersonate-group': 'ops' } }).catch((e) => e);
    t.equal(bad.code, Code.INVALID_ARGUMENT);
    t.match(bad.status.message, /without impersonating a user/);
  });

  await t.test('a client certificate from an untrusted CA identifies nobody: UNAUTHENTICATED, as over HTTPS', async (t) => {
    const { cert, key } = makeCA('untrusted-ca').issue({ cn: 'mallory', orgs: ['system:masters'], client: true });
    const r = await both(s.anon.with({ cert, key }), s.grpc({ token: undefined, cert, key }), listCMs);
    t.equal(r.code, Code.UNAUTHENTICATED);
    const still = await overGrpc(s.g, listCMs);
    t.equal(still.code, Code.OK, 'the server keeps serving');
  });

  await t.test('a client connects with the admin kubeconfig (its server host, the gRPC port)', async (t) => {
    const kubeconfig = join(s.dataDir, 'admin.kubeconfig');
    t.ok(existsSync(kubeconfig));
    const c = ResourceClient.fromKubeconfig(kubeconfig, s.grpcPort);
    t.teardown(() => c.close());
    const r = await overGrpc(c, whoami);
    t.equal(r.code, Code.OK);
    t.ok(userOf(r.value).groups.includes('system:masters'), 'the admin certificate is in system:masters');
  });
});
