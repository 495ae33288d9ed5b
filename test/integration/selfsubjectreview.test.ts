import t from 'tap';
import { ALICE_TOKEN, startServer } from '../helpers/server.js';

/** These tests are about who the caller is, not what they may do: any identity is let through. */
const ALLOW_ALL = '--authorization-mode=AlwaysAllow';

const PATH = '/apis/authentication.svc.io/v1/selfsubjectreviews';

t.test('SelfSubjectReview: a create answers with the caller\'s own identity and stores nothing', async (t) => {
  const s = await startServer([ALLOW_ALL]);
  t.teardown(() => s.stop());
  const alice = s.admin.with({ token: ALICE_TOKEN });
  const r = await alice.post(PATH, { apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' });
  t.equal(r.status, 201);
  t.same(r.json, {
    kind: 'SelfSubjectReview',
    apiVersion: 'authentication.svc.io/v1',
    metadata: { creationTimestamp: null },
    status: { userInfo: { username: 'alice', uid: 'uid-alice', groups: ['dev', 'qa', 'system:authenticated'] } },
  });
  const empty = await alice.post(PATH, {});
  t.equal(empty.status, 201, 'TypeMeta may be left out: the path names the kind');
  const anon = await s.anon.post(PATH, { apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' });
  t.same(anon.json.status.userInfo, { username: 'system:anonymous', groups: ['system:unauthenticated'] });
  t.equal((await alice.get(PATH)).status, 405, 'only create is served');
  t.equal((await alice.get(`${PATH}/x`)).status, 405);
  const wrong = await alice.post(PATH, { apiVersion: 'v1', kind: 'ConfigMap' });
  t.equal(wrong.status, 400, 'a body of another kind is refused');
  const disc = await alice.get('/apis/authentication.svc.io/v1');
  t.same(disc.json.resources.map((x: { name: string; verbs: string[] }) => [x.name, x.verbs]), [
    ['selfsubjectreviews', ['create']],
    ['tokenreviews', ['create']],
  ]);
});

t.test('reviews are served under upstream\'s authentication.k8s.io spelling too, answered in that spelling, even with aliases off and then not advertised', async (t) => {
  const s = await startServer([ALLOW_ALL, '--upstream-group-aliases=false']);
  t.teardown(() => s.stop());
  const alice = s.admin.with({ token: ALICE_TOKEN });
  const UPSTREAM = '/apis/authentication.k8s.io/v1/selfsubjectreviews';
  for (const apiVersion of ['authentication.k8s.io/v1', 'authentication.svc.io/v1']) {
    const r = await alice.post(UPSTREAM, { apiVersion, kind: 'SelfSubjectReview' });
    t.equal(r.status, 201, `a body spelled ${apiVersion} is the same kind`);
    t.equal(r.json.apiVersion, 'authentication.k8s.io/v1', 'the answer is spelled as the path');
    t.equal(r.json.status.userInfo.username, 'alice');
  }
  const canonical = await alice.post(PATH, { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
  t.equal(canonical.json.apiVersion, 'authentication.svc.io/v1', 'under the svc.io path the answer is spelled svc.io');
  const groups = (await alice.get('/apis')).json.groups.map((g: { name: string }) => g.name);
  t.notOk(groups.includes('authentication.k8s.io'), 'the upstream spelling is not advertised');
  t.equal((await alice.post('/apis/storage.k8s.io/v1/csidrivers', {})).status, 404, 'with aliases off, other groups have no alias');
});
