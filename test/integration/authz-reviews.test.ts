/**
 * Access reviews (authorization.svc.io/v1) answered by the server's authorizer chain, here Node then
 * ABAC: SelfSubjectAccessReview, SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectRulesReview,
 * their validation, selectors passed on to the authorizers; dry-run writes authorized as real ones;
 * the Node mode with NodeRestriction for a node's own Lease.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { issueClientCert } from '../../core/server/certs.js';
import { Client } from '../helpers/client.js';
import { ALICE_TOKEN, BOB_TOKEN } from '../helpers/server.js';
import { expectStatus, startSeeded, tmp } from '../helpers/fixtures.js';

const API = '/apis/authorization.svc.io/v1';
const V1 = 'abac.authorization.svc.io/v1beta1';
const line = (spec: Record<string, unknown>) => JSON.stringify({ apiVersion: V1, kind: 'Policy', spec });

const policyFile = (): string => {
  const p = join(tmp('svc-abac-'), 'policy.jsonl');
  writeFileSync(
    p,
    [
      line({ user: 'alice', namespace: 'team', resource: '*', apiGroup: '*' }),
      line({ user: 'bob', namespace: '*', resource: '*', apiGroup: '*', readonly: true }),
      line({ group: 'system:authenticated', namespace: '*', resource: 'selfsubjectaccessreviews', apiGroup: 'authorization.svc.io' }),
      line({ group: 'system:authenticated', namespace: '*', resource: 'selfsubjectrulesreviews', apiGroup: 'authorization.svc.io' }),
      line({ group: 'system:authenticated', nonResourcePath: '/healthz', readonly: true }),
    ].join('\n'),
  );
  return p;
};

t.test('access reviews with --authorization-mode=Node,ABAC', async (t) => {
  const s = await startSeeded(['--authorization-mode=Node,ABAC', `--authorization-policy-file=${policyFile()}`]);
  const alice = s.admin.with({ token: ALICE_TOKEN });
  const bob = s.admin.with({ token: BOB_TOKEN });
  const node = new Client({ url: s.url, ca: s.ca, ...issueClientCert(s.dataDir, 'system:node:n1', ['system:nodes']) });
  t.teardown(async () => {
    for (const c of [alice, bob, node]) c.close();
    await s.stop();
  });
  for (const n of ['team', 'other']) await s.admin.post('/api/v1/namespaces', { metadata: { name: n } });

  const ssar = (c: Client, spec: unknown) => c.post(`${API}/selfsubjectaccessreviews`, { apiVersion: 'authorization.svc.io/v1', kind: 'SelfSubjectAccessReview', spec });
  const sar = (c: Client, spec: unknown, metadata: unknown = {}) => c.post(`${API}/subjectaccessreviews`, { apiVersion: 'authorization.svc.io/v1', kind: 'SubjectAccessReview', metadata, spec });

  t.test('SelfSubjectAccessReview answers for the caller', async (t) => {
    const yes = await ssar(alice, { resourceAttributes: { namespace: 'team', verb: 'create', resource: 'configmaps' } });
    t.equal(yes.status, 201);
    t.same(yes.json, {
      kind: 'SelfSubjectAccessReview',
      apiVersion: 'authorization.svc.io/v1',
      metadata: { creationTimestamp: null },
      spec: { resourceAttributes: { namespace: 'team', verb: 'create', resource: 'configmaps' } },
      status: { allowed: true },
    });
    const no = await ssar(alice, { resourceAttributes: { namespace: 'other', verb: 'get', resource: 'configmaps' } });
    t.same(no.json.status, { allowed: false, reason: 'No policy matched.' }, 'no opinion from every mode: not allowed, not denied, with the reasons');
    const path = await ssar(bob, { nonResourceAttributes: { path: '/healthz', verb: 'get' } });
    t.same(path.json.status, { allowed: true });
    const anon = await ssar(s.anon, { resourceAttributes: { verb: 'get', resource: 'secrets' } });
    expectStatus(t, anon, 403, 'Forbidden', /User "system:anonymous" cannot create resource "selfsubjectaccessreviews" in API group "authorization\.svc\.io" at the cluster scope/);
  });

  t.test('SubjectAccessReview answers for the user, groups, uid and extra in its spec', async (t) => {
    const rows: [string, unknown, Record<string, unknown>][] = [
      ['bob may list anywhere', { user: 'bob', resourceAttributes: { namespace: 'x', verb: 'list', resource: 'secrets' } }, { allowed: true }],
      ['bob may not delete', { user: 'bob', resourceAttributes: { namespace: 'x', verb: 'delete', resource: 'secrets', name: 's' } }, { allowed: false, reason: 'No policy matched.' }],
      ['groups alone are a subject', { groups: ['system:authenticated'], nonResourceAttributes: { path: '/healthz', verb: 'get' } }, { allowed: true }],
      ['system:masters is allowed by the bypass', { user: 'root', groups: ['system:masters'], resourceAttributes: { verb: 'delete', resource: 'namespaces' } }, { allowed: true }],
    ];
    for (const [rule, spec, status] of rows) {
      const r = await sar(s.admin, spec);
      t.equal(r.status, 201, rule);
      t.same(r.json.status, status, rule);
    }
    expectStatus(t, await sar(alice, rows[0]![1]), 403, 'Forbidden', /cannot create resource "subjectaccessreviews"/);
  });

  t.test('LocalSubjectAccessReview answers about its own namespace', async (t) => {
    const lsar = (c: Client, namespace: string, body: Record<string, unknown>) => c.post(`${API}/namespaces/${namespace}/localsubjectaccessreviews`, { apiVersion: 'authorization.svc.io/v1', kind: 'LocalSubjectAccessReview', ...body });
    const r = await lsar(alice, 'team', { spec: { user: 'bob', resourceAttributes: { namespace: 'team', verb: 'get', resource: 'secrets' } } });
    t.equal(r.status, 201, r.text);
    t.same(r.json.metadata, { namespace: 'team', creationTimestamp: null }, 'the namespace comes from the path');
    t.same(r.json.status, { allowed: true });
    expectStatus(t, await lsar(alice, 'team', { spec: { user: 'bob', resourceAttributes: { namespace: 'other', verb: 'get' } } }), 422, 'Invalid', 'LocalSubjectAccessReview.authorization.svc.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: "other": must match metadata.namespace');
    expectStatus(t, await lsar(alice, 'team', { spec: { user: 'bob', nonResourceAttributes: { path: '/x', verb: 'get' } } }), 422, 'Invalid', /spec\.nonResourceAttributes: Invalid value: \{"path":"\/x","verb":"get"\}: disallowed on this kind of request/);
    expectStatus(t, await lsar(alice, 'team', { metadata: { namespace: 'other' }, spec: { user: 'bob', resourceAttributes: { namespace: 'team' } } }), 400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    expectStatus(t, await lsar(alice, 'other', { spec: { user: 'bob', resourceAttributes: { namespace: 'other' } } }), 403, 'Forbidden', /cannot create resource "localsubjectaccessreviews" in API group "authorization\.svc\.io" in the namespace "other"/);
  });

  t.test('SelfSubjectRulesReview lists what the caller may do in a namespace', async (t) => {
    const r = await alice.post(`${API}/selfsubjectrulesreviews`, { apiVersion: 'authorization.svc.io/v1', kind: 'SelfSubjectRulesReview', spec: { namespace: 'team' } });
    t.equal(r.status, 201);
    t.same(r.json, {
      kind: 'SelfSubjectRulesReview',
      apiVersion: 'authorization.svc.io/v1',
      metadata: { creationTimestamp: null },
      spec: {},
      status: {
        resourceRules: [
          { verbs: ['*'], apiGroups: ['*'], resources: ['*'] },
          { verbs: ['*'], apiGroups: ['authorization.svc.io'], resources: ['selfsubjectaccessreviews'] },
          { verbs: ['*'], apiGroups: ['authorization.svc.io'], resources: ['selfsubjectrulesreviews'] },
        ],
        nonResourceRules: [],
        incomplete: false,
      },
    });
    const elsewhere = await alice.post(`${API}/selfsubjectrulesreviews`, { spec: { namespace: 'other' } });
    t.same(elsewhere.json.status.resourceRules.length, 2, "alice's team policy is not listed elsewhere");
    expectStatus(t, await alice.post(`${API}/selfsubjectrulesreviews`, { spec: {} }), 400, 'BadRequest', 'no namespace on request');
  });

  t.test('a node cannot list its rules: its rules review says incomplete, with the reason', async (t) => {
    const r = await node.post(`${API}/selfsubjectrulesreviews`, { spec: { namespace: 'team' } });
    t.equal(r.status, 201, r.text);
    t.equal(r.json.status.incomplete, true);
    t.equal(r.json.status.evaluationError, 'node authorizer does not support user rule resolution');
    const sar = await s.admin.post(`${API}/subjectaccessreviews`, {
      spec: { user: 'system:node:n1', groups: ['system:nodes'], resourceAttributes: { verb: 'create', resource: 'events', namespace: 'x' } },
    });
    t.same(sar.json.status, { allowed: true }, 'the static node rules allow events');
  });

  const invalid: [string, string, unknown, string | RegExp][] = [
    [
      'both kinds of attributes',
      'selfsubjectaccessreviews',
      { spec: { resourceAttributes: { verb: 'get' }, nonResourceAttributes: { path: '/x', verb: 'get' } } },
      'SelfSubjectAccessReview.authorization.svc.io "" is invalid: spec.nonResourceAttributes: Invalid value: {"path":"/x","verb":"get"}: cannot be specified in combination with resourceAttributes',
    ],
    ['neither kind of attributes', 'selfsubjectaccessreviews', { spec: {} }, 'SelfSubjectAccessReview.authorization.svc.io "" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified'],
    ['no user and no groups', 'subjectaccessreviews', { spec: { resourceAttributes: { verb: 'get' } } }, 'SubjectAccessReview.authorization.svc.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified'],
    ['metadata that is not empty', 'subjectaccessreviews', { metadata: { name: 'x' }, spec: { user: 'a', resourceAttributes: { verb: 'get' } } }, 'SubjectAccessReview.authorization.svc.io "" is invalid: metadata: Invalid value: {"name":"x","creationTimestamp":null}: must be empty'],
    [
      'a selector with both a raw form and requirements',
      'selfsubjectaccessreviews',
      { spec: { resourceAttributes: { verb: 'list', fieldSelector: { rawSelector: 'a=b', requirements: [{ key: 'a', operator: 'In', values: ['b'] }] } } } },
      'SelfSubjectAccessReview.authorization.svc.io "" is invalid: spec.resourceAttributes.fieldSelector.rawSelector: Invalid value: "a=b": may not specified at the same time as requirements',
    ],
    [
      'an empty selector',
      'selfsubjectaccessreviews',
      { spec: { resourceAttributes: { verb: 'list', labelSelector: {} } } },
      'SelfSubjectAccessReview.authorization.svc.io "" is invalid: spec.resourceAttributes.labelSelector.requirements: Required value: when spec.resourceAttributes.labelSelector is specified, requirements or rawSelector is required',
    ],
    [
      'a field requirement In with two values',
      'selfsubjectaccessreviews',
      { spec: { resourceAttributes: { verb: 'list', fieldSelector: { requirements: [{ key: 'a', operator: 'In', values: ['b', 'c'] }] } } } },
      "SelfSubjectAccessReview.authorization.svc.io \"\" is invalid: spec.resourceAttributes.fieldSelector.requirements[0].values: Required value: must have one element when `operator` is 'In' or 'NotIn'",
    ],
    [
      'a label requirement with a bad key',
      'selfsubjectaccessreviews',
      { spec: { resourceAttributes: { verb: 'list', labelSelector: { requirements: [{ key: 'a b', operator: 'Exists' }] } } } },
      /spec\.resourceAttributes\.labelSelector\.requirements\[0\]\.key: Invalid value: "a b": name part must consist of alphanumeric characters/,
    ],
  ];
  for (const [rule, resource, body, message] of invalid) {
    t.test(`an invalid review is a 422: ${rule}`, async (t) => {
      const r = await s.admin.post(`${API}/${resource}`, body);
      expectStatus(t, r, 422, 'Invalid', message);
    });
  }

  t.test('selectors in a review reach the authorizers, raw or as requirements (Node lists pods by spec.nodeName)', async (t) => {
    const nodeSar = (fieldSelector?: unknown) =>
      s.admin.post(`${API}/subjectaccessreviews`, {
        spec: { user: 'system:node:n1', groups: ['system:nodes'], resourceAttributes: { verb: 'list', resource: 'pods', ...(fieldSelector ? { fieldSelector } : {}) } },
      });
    t.same((await nodeSar({ rawSelector: 'spec.nodeName=n1' })).json.status, { allowed: true });
    t.same((await nodeSar({ requirements: [{ key: 'spec.nodeName', operator: 'In', values: ['n1'] }] })).json.status, { allowed: true });
    const other = (await nodeSar({ rawSelector: 'spec.nodeName=n2' })).json.status;
    t.equal(other.allowed, false);
    t.match(other.reason, /can only list\/watch pods with spec\.nodeName field selector/);
    t.equal((await nodeSar()).json.status.allowed, false);
  });

  t.test('dry-run writes are authorized exactly like the real request', async (t) => {
    const cm = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });
    const dry = await alice.post('/api/v1/namespaces/team/configmaps?dryRun=All', cm('dry'));
    t.equal(dry.status, 201, 'allowed, as the real create would be');
    t.equal((await s.admin.get('/api/v1/namespaces/team/configmaps/dry')).status, 404, 'and nothing stored');
    const rows: [string, Client, string, string, unknown, string][] = [
      ['create outside her namespace', alice, 'POST', '/api/v1/namespaces/other/configmaps', cm('x'), 'configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "other": No policy matched.'],
      ['a readonly user creating', bob, 'POST', '/api/v1/namespaces/team/configmaps', cm('x'), 'configmaps is forbidden: User "bob" cannot create resource "configmaps" in API group "" in the namespace "team": No policy matched.'],
      ['a readonly user deleting', bob, 'DELETE', '/api/v1/namespaces/team/configmaps/x', undefined, 'configmaps "x" is forbidden: User "bob" cannot delete resource "configmaps" in API group "" in the namespace "team": No policy matched.'],
      ['a readonly user patching', bob, 'PATCH', '/api/v1/namespaces/team/configmaps/x', { data: { a: 'b' } }, 'configmaps "x" is forbidden: User "bob" cannot patch resource "configmaps" in API group "" in the namespace "team": No policy matched.'],
    ];
    for (const [rule, c, method, path, body, message] of rows) {
      const real = await c.request(method, path, { body, contentType: method === 'PATCH' ? 'application/merge-patch+json' : undefined });
      const dryRun = await c.request(method, `${path}?dryRun=All`, { body, contentType: method === 'PATCH' ? 'application/merge-patch+json' : undefined });
      expectStatus(t, real, 403, 'Forbidden', message);
      t.same(dryRun.json, real.json, `${rule}: the dry run gets the same 403`);
    }
  });

  t.test('Node mode and NodeRestriction: a node keeps its own Lease in svc-node-lease and nothing more', async (t) => {
    const LEASES = '/apis/coordination.svc.io/v1/namespaces/svc-node-lease/leases';
    const lease = (name: string) => ({ apiVersion: 'coordination.svc.io/v1', kind: 'Lease', metadata: { name }, spec: { holderIdentity: name, leaseDurationSeconds: 40 } });
    const created = await node.post(LEASES, lease('n1'));
    t.equal(created.status, 201, created.text);
    const renewed = await node.put(`${LEASES}/n1`, { ...created.json, spec: { ...created.json.spec, renewTime: '2024-01-01T00:00:00.000000Z' } });
    t.equal(renewed.status, 200, renewed.text);
    expectStatus(t, await node.post(LEASES, lease('n2')), 403, 'Forbidden', 'leases.coordination.svc.io "n2" is forbidden: can only access node lease with the same name as the requesting node');
    t.equal((await s.admin.get(`${LEASES}/n2`)).status, 404, 'nothing stored');
    expectStatus(t, await node.post(`${LEASES}?dryRun=All`, lease('n3')), 403, 'Forbidden', /can only access node lease with the same name/);
    await s.admin.post(LEASES, lease('n2'));
    expectStatus(t, await node.get(`${LEASES}/n2`), 403, 'Forbidden', /: can only access node lease with the same name as the requesting node\nNo policy matched\.$/);
    expectStatus(t, await node.get(LEASES), 403, 'Forbidden', /can only get, create, update, patch, or delete a node lease/);
    await s.admin.post('/api/v1/namespaces/team/secrets', { metadata: { name: 's' } });
    expectStatus(t, await node.get('/api/v1/namespaces/team/secrets/s'), 403, 'Forbidden', /: no relationship found between node 'n1' and this object\nNo policy matched\.$/);
    t.equal((await node.post('/api/v1/namespaces/team/events', { metadata: { name: 'e' }, involvedObject: { kind: 'Pod', name: 'p1', namespace: 'team' }, reason: 'Started', message: 'm', type: 'Normal' })).status, 201, 'a node may record events');
  });
});
