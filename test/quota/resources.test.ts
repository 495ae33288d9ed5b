import t from 'tap';
import {
  addLists,
  canonicalQuotaName,
  countedKind,
  countedNames,
  isIntegerResourceName,
  lessThanOrEqual,
  listsEqual,
  maskList,
  matchingResources,
  objectUsage,
  prettyPrint,
  quotaIgnores,
} from '../../core/quota/resources.js';
import type { ResourceType } from '../../core/registry/resource-type.js';

const kind = (group: string, plural: string, extra: Partial<ResourceType> = {}): ResourceType => ({ group, plural, namespaced: true, ...extra }) as ResourceType;

t.test('object-count names', async (t) => {
  t.same(countedNames(kind('', 'configmaps')), ['count/configmaps', 'configmaps']);
  t.same(countedNames(kind('', 'serviceaccounts')), ['count/serviceaccounts']);
  t.same(countedNames(kind('coordination.svc.io', 'leases')), ['count/leases.coordination.svc.io']);
  t.same(countedNames(kind('example.com', 'widgets')), ['count/widgets.example.com']);
  t.equal(canonicalQuotaName('count/leases.coordination.k8s.io'), 'count/leases.coordination.svc.io');
  t.equal(canonicalQuotaName('count/widgets.example.com'), 'count/widgets.example.com');
  t.equal(canonicalQuotaName('requests.cpu'), 'requests.cpu');
  t.same(matchingResources(kind('coordination.svc.io', 'leases'), ['count/leases.coordination.k8s.io', 'cpu', 'count/leases.coordination.svc.io']), [
    'count/leases.coordination.k8s.io',
    'count/leases.coordination.svc.io',
  ]);
  t.same(objectUsage(kind('', 'secrets'), ['secrets', 'count/secrets', 'count/configmaps']), { secrets: '1', 'count/secrets': '1' });
  t.same(countedKind('count/leases.coordination.k8s.io'), { group: 'coordination.svc.io', plural: 'leases' });
  t.same(countedKind('configmaps'), { group: '', plural: 'configmaps' });
  t.equal(countedKind('requests.memory'), undefined);
  t.ok(quotaIgnores(kind('', 'events')));
  t.ok(quotaIgnores(kind('events.svc.io', 'events')));
  t.ok(quotaIgnores(kind('authorization.svc.io', 'localsubjectaccessreviews', { virtual: true })));
  t.ok(quotaIgnores(kind('', 'namespaces', { namespaced: false })));
  t.notOk(quotaIgnores(kind('', 'configmaps')));
});

t.test('integer resources: the core counts and every extended name (count/ included)', async (t) => {
  for (const n of ['pods', 'configmaps', 'count/configmaps', 'count/widgets.example.com', 'example.com/gpu']) t.ok(isIntegerResourceName(n), n);
  for (const n of ['cpu', 'memory', 'requests.storage', 'requests.example.com/gpu', 'svc.io/thing']) t.notOk(isIntegerResourceName(n), n);
});

t.test('ResourceList arithmetic', async (t) => {
  t.same(addLists({ a: '1', b: '500m' }, { b: '500m', c: '1Gi' }), { a: '1', b: '1', c: '1Gi' });
  t.same(maskList({ a: '1', b: '2' }, ['b', 'z']), { b: '2' });
  t.same(lessThanOrEqual({ a: '2', b: '1', c: '9' }, { a: '1', b: '1' }), { ok: false, exceeded: ['a'] });
  t.ok(listsEqual({ a: '1000m' }, { a: '1' }));
  t.ok(listsEqual(undefined, {}));
  t.notOk(listsEqual({ a: '1' }, { a: '1', b: '0' }));
  t.equal(prettyPrint({ 'count/secrets': '1', 'count/configmaps': '2', cpu: '1500m' }), 'count/configmaps=2,count/secrets=1,cpu=1500m');
});
