/**
 * The aggregator's pure rules: upstream's kube-aware version order, APIService order in discovery,
 * the default service resolution, the APIServices the built-in kinds call for, and the request-header
 * form of an identity.
 */
import t from 'tap';
import { desiredAPIServices } from '../../core/aggregator/autoregister.js';
import { sortAPIServices } from '../../core/aggregator/documents.js';
import { compareKubeAwareVersions } from '../../core/aggregator/priorities.js';
import { ServiceResolver } from '../../core/aggregator/resolver.js';
import { identityHeaders } from '../../core/aggregator/transport.js';
import type { APIService } from '../../core/registry/apiregistration/apiservices.js';
import { builtinResourceTypes } from '../../core/registry/catalog.js';

t.test('kube-aware version order as upstream\'s example: v10, v2, v1, v11beta2, v10beta3, v3beta1, v12alpha1, v11alpha2, foo1, foo10', async (t) => {
  const want = ['v10', 'v2', 'v1', 'v11beta2', 'v10beta3', 'v3beta1', 'v12alpha1', 'v11alpha2', 'foo1', 'foo10'];
  t.same([...want].reverse().sort(compareKubeAwareVersions), want);
});

const svc = (group: string, version: string, gpm: number, vp: number): APIService => ({ metadata: { name: `${version}.${group}` }, spec: { group, version, groupPriorityMinimum: gpm, versionPriority: vp } }) as APIService;

t.test('discovery order: groups by their highest-priority APIService (priority, then name), versions by versionPriority then kube-aware order', async (t) => {
  const groups = sortAPIServices([svc('b.example.com', 'v1', 100, 10), svc('a.example.com', 'v1', 100, 10), svc('z.example.com', 'v1beta1', 500, 10), svc('z.example.com', 'v1', 500, 10), svc('z.example.com', 'v2alpha1', 500, 20), svc('c.example.com', 'v1', 50, 10)]);
  t.same(
    groups.map((g) => g.map((a) => a.metadata.name)),
    [['v2alpha1.z.example.com', 'v1.z.example.com', 'v1beta1.z.example.com'], ['v1.a.example.com'], ['v1.b.example.com'], ['v1.c.example.com']],
  );
});

t.test('a service reference resolves by default to <name>.<namespace>.svc:<port> (443 unless given)', async (t) => {
  const r = new ServiceResolver(undefined);
  t.same(r.resolve({ namespace: 'ns', name: 'api' }), { host: 'api.ns.svc:443', hostname: 'api.ns.svc', port: 443, serverName: 'api.ns.svc' });
  t.equal(r.resolve({ namespace: 'ns', name: 'api', port: 8443 }).host, 'api.ns.svc:8443');
});

t.test('the built-in kinds call for one Local APIService per group version, labelled onstart', async (t) => {
  const want = desiredAPIServices(builtinResourceTypes);
  t.same([...want.keys()].sort(), ['v1.', 'v1.admissionregistration.svc.io', 'v1.apiextensions.svc.io', 'v1.apiregistration.svc.io', 'v1.authentication.svc.io', 'v1.authorization.svc.io', 'v1.certificates.svc.io', 'v1.coordination.svc.io', 'v1.flowcontrol.apiserver.svc.io', 'v1.rbac.authorization.svc.io', 'v1.storage.svc.io']);
  t.same(want.get('v1.')?.spec, { version: 'v1', groupPriorityMinimum: 18000, versionPriority: 1 });
  for (const a of want.values()) t.equal(a.metadata.labels?.['kube-aggregator.kubernetes.io/automanaged'], 'onstart', a.metadata.name ?? '');
});

t.test('an identity in request-header form: one header per group, extra keys escaped', async (t) => {
  const names = { user: 'x-remote-user', uid: undefined, group: 'x-remote-group', extraPrefix: 'x-remote-extra-' };
  t.same(identityHeaders(names, { username: 'alice', uid: 'u1', groups: ['dev', 'qa'], extra: { 'scopes.example.com/a b': ['one', 'two'] } }), [
    ['x-remote-user', 'alice'],
    ['x-remote-group', 'dev'],
    ['x-remote-group', 'qa'],
    ['x-remote-extra-scopes.example.com%2Fa%20b', 'one'],
    ['x-remote-extra-scopes.example.com%2Fa%20b', 'two'],
  ]);
});
