/**
 * RBAC rule semantics, table-driven: which requests a rule allows (verbs, groups, resources with
 * subresources and `*\/sub`, resource names, non-resource URLs with a trailing `*`), which rules cover
 * which (escalation), and the compact wording of missing permissions.
 */
import t from 'tap';
import type { Attributes } from '../../core/authz/authorizer.js';
import { compactString, covers, describeMissing, ruleAllows } from '../../core/authz/rbac/rules.js';
import type { PolicyRule } from '../../core/registry/rbac/policy.js';

const user = { username: 'u', groups: [] };

function res(verb: string, group: string, resource: string, o: { sub?: string; name?: string; ns?: string } = {}): Attributes {
  return { user, verb, isResourceRequest: true, path: '', namespace: o.ns ?? 'ns', apiGroup: group, apiVersion: 'v1', resource, subresource: o.sub ?? '', name: o.name ?? '' };
}
const path = (verb: string, p: string): Attributes => ({ user, verb, isResourceRequest: false, path: p, namespace: '', apiGroup: '', apiVersion: '', resource: '', subresource: '', name: '' });

t.test('ruleAllows: a rule allows a request when verb, group, resource and name all match', async (t) => {
  const rows: [string, PolicyRule, Attributes, boolean][] = [
    ['exact verb, group, resource', { verbs: ['get'], apiGroups: [''], resources: ['configmaps'] }, res('get', '', 'configmaps'), true],
    ['another verb', { verbs: ['get'], apiGroups: [''], resources: ['configmaps'] }, res('list', '', 'configmaps'), false],
    ['verb *', { verbs: ['*'], apiGroups: [''], resources: ['configmaps'] }, res('deletecollection', '', 'configmaps'), true],
    ['another group', { verbs: ['get'], apiGroups: [''], resources: ['configmaps'] }, res('get', 'storage.svc.io', 'configmaps'), false],
    ['group *', { verbs: ['get'], apiGroups: ['*'], resources: ['csidrivers'] }, res('get', 'storage.svc.io', 'csidrivers'), true],
    ['"" is the core group only', { verbs: ['get'], apiGroups: [''], resources: ['leases'] }, res('get', 'coordination.svc.io', 'leases'), false],
    ['resource *', { verbs: ['get'], apiGroups: [''], resources: ['*'] }, res('get', '', 'secrets'), true],
    ['resource * matches subresources too', { verbs: ['update'], apiGroups: [''], resources: ['*'] }, res('update', '', 'namespaces', { sub: 'status' }), true],
    ['the resource does not grant its subresource', { verbs: ['update'], apiGroups: [''], resources: ['namespaces'] }, res('update', '', 'namespaces', { sub: 'finalize' }), false],
    ['resource/subresource', { verbs: ['update'], apiGroups: [''], resources: ['namespaces/finalize'] }, res('update', '', 'namespaces', { sub: 'finalize' }), true],
    ['resource/subresource is not the resource', { verbs: ['get'], apiGroups: [''], resources: ['namespaces/status'] }, res('get', '', 'namespaces'), false],
    ['*/subresource matches it on any resource', { verbs: ['get'], apiGroups: ['*'], resources: ['*/status'] }, res('get', '', 'namespaces', { sub: 'status' }), true],
    ['*/subresource is not another subresource', { verbs: ['get'], apiGroups: ['*'], resources: ['*/status'] }, res('get', '', 'namespaces', { sub: 'finalize' }), false],
    ['*/subresource is not the resource', { verbs: ['get'], apiGroups: ['*'], resources: ['*/status'] }, res('get', '', 'namespaces'), false],
    ['resourceNames: the named object', { verbs: ['get'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['a', 'b'] }, res('get', '', 'configmaps', { name: 'b' }), true],
    ['resourceNames: another object', { verbs: ['get'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['a'] }, res('get', '', 'configmaps', { name: 'c' }), false],
    ['resourceNames: never a list (no name)', { verbs: ['list'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['a'] }, res('list', '', 'configmaps'), false],
    ['resourceNames: never a create (no name)', { verbs: ['create'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['a'] }, res('create', '', 'configmaps'), false],
    ['a URL rule never allows a resource', { verbs: ['get'], nonResourceURLs: ['*'] }, res('get', '', 'configmaps'), false],
    ['a resource rule never allows a URL', { verbs: ['get'], apiGroups: ['*'], resources: ['*'] }, path('get', '/healthz'), false],
    ['exact URL', { verbs: ['get'], nonResourceURLs: ['/healthz'] }, path('get', '/healthz'), true],
    ['exact URL is not a longer path', { verbs: ['get'], nonResourceURLs: ['/healthz'] }, path('get', '/healthz/ping'), false],
    ['trailing * is a prefix', { verbs: ['get'], nonResourceURLs: ['/healthz/*'] }, path('get', '/healthz/ping'), true],
    ['trailing * without the slash', { verbs: ['get'], nonResourceURLs: ['/api*'] }, path('get', '/apis/storage.svc.io'), true],
    ['/x/* does not match /x', { verbs: ['get'], nonResourceURLs: ['/healthz/*'] }, path('get', '/healthz'), false],
    ['URL * matches every path', { verbs: ['get'], nonResourceURLs: ['*'] }, path('get', '/metrics'), true],
    ['URL verbs are lowercase methods', { verbs: ['get'], nonResourceURLs: ['*'] }, path('post', '/metrics'), false],
    // requests reach authorization with the canonical group; rules may name either spelling
    ['upstream group name matches the served group', { verbs: ['get'], apiGroups: ['storage.k8s.io'], resources: ['csidrivers'] }, res('get', 'storage.svc.io', 'csidrivers'), true],
    ['rbac.authorization.k8s.io matches rbac.authorization.svc.io', { verbs: ['list'], apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles'] }, res('list', 'rbac.authorization.svc.io', 'roles'), true],
    ['the canonical name matches as written', { verbs: ['get'], apiGroups: ['storage.svc.io'], resources: ['csidrivers'] }, res('get', 'storage.svc.io', 'csidrivers'), true],
    ['a k8s.io group of its own (custom resources) only as written', { verbs: ['get'], apiGroups: ['x.svc.io'], resources: ['things'] }, res('get', 'x.k8s.io', 'things'), false],
    ['another upstream group is not ours', { verbs: ['get'], apiGroups: ['storage.k8s.io'], resources: ['csidrivers'] }, res('get', 'coordination.svc.io', 'csidrivers'), false],
  ];
  for (const [name, rule, attrs, want] of rows) t.equal(ruleAllows(attrs, rule), want, name);
});

t.test('covers: every piece of the wanted rules must be covered by one owner rule', async (t) => {
  const rows: [string, PolicyRule[], PolicyRule[], boolean][] = [
    ['equal rules', [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }], [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }], true],
    ['more verbs than held', [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }], [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }], false],
    ['pieces from two owner rules', [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }, { verbs: ['list'], apiGroups: [''], resources: ['pods'] }], [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }], true],
    ['* covers every verb', [{ verbs: ['*'], apiGroups: [''], resources: ['pods'] }], [{ verbs: ['escalate'], apiGroups: [''], resources: ['pods'] }], true],
    ['a named verb does not cover *', [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }], [{ verbs: ['*'], apiGroups: [''], resources: ['pods'] }], false],
    ['*/sub covers r/sub', [{ verbs: ['get'], apiGroups: [''], resources: ['*/status'] }], [{ verbs: ['get'], apiGroups: [''], resources: ['namespaces/status'] }], true],
    ['the resource does not cover its subresource', [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }], [{ verbs: ['get'], apiGroups: [''], resources: ['pods/log'] }], false],
    ['unrestricted names cover named ones', [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }], [{ verbs: ['get'], apiGroups: [''], resources: ['pods'], resourceNames: ['a'] }], true],
    ['named ones do not cover unrestricted', [{ verbs: ['get'], apiGroups: [''], resources: ['pods'], resourceNames: ['a'] }], [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }], false],
    ['a subset of names', [{ verbs: ['get'], apiGroups: [''], resources: ['pods'], resourceNames: ['a', 'b'] }], [{ verbs: ['get'], apiGroups: [''], resources: ['pods'], resourceNames: ['b'] }], true],
    ['URL prefix covers a path under it', [{ verbs: ['get'], nonResourceURLs: ['/healthz*'] }], [{ verbs: ['get'], nonResourceURLs: ['/healthz/etcd'] }], true],
    ['URL * covers another URL wildcard', [{ verbs: ['get'], nonResourceURLs: ['*'] }], [{ verbs: ['get'], nonResourceURLs: ['/x/*'] }], true],
    ['resources do not cover URLs', [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }], [{ verbs: ['get'], nonResourceURLs: ['/metrics'] }], false],
    ['cluster-admin covers anything', [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }, { verbs: ['*'], nonResourceURLs: ['*'] }], [{ verbs: ['bind'], apiGroups: ['x.io'], resources: ['a/b'], resourceNames: ['n'] }, { verbs: ['get'], nonResourceURLs: ['/m'] }], true],
    ['nothing held covers only nothing', [], [], true],
    ['an upstream group name covers the served group', [{ verbs: ['get'], apiGroups: ['storage.k8s.io'], resources: ['csidrivers'] }], [{ verbs: ['get'], apiGroups: ['storage.svc.io'], resources: ['csidrivers'] }], true],
    ['and its own spelling', [{ verbs: ['get'], apiGroups: ['storage.k8s.io'], resources: ['csidrivers'] }], [{ verbs: ['get'], apiGroups: ['storage.k8s.io'], resources: ['csidrivers'] }], true],
    ['the served group does not cover an upstream name (it may be a group of its own)', [{ verbs: ['get'], apiGroups: ['storage.svc.io'], resources: ['csidrivers'] }], [{ verbs: ['get'], apiGroups: ['storage.k8s.io'], resources: ['csidrivers'] }], false],
    ['both names held cover both', [{ verbs: ['get'], apiGroups: ['storage.svc.io', 'storage.k8s.io'], resources: ['csidrivers'] }], [{ verbs: ['get'], apiGroups: ['storage.k8s.io', 'storage.svc.io'], resources: ['csidrivers'] }], true],
  ];
  for (const [name, owner, wanted, want] of rows) t.equal(covers(owner, wanted).covered, want, name);
});

t.test('missing permissions are compacted by resource and worded as upstream', async (t) => {
  const { missing } = covers([{ verbs: ['get'], apiGroups: [''], resources: ['secrets'] }], [
    { verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['secrets', 'configmaps'] },
    { verbs: ['get'], nonResourceURLs: ['/metrics', '/healthz'] },
    { verbs: ['update'], apiGroups: ['storage.svc.io'], resources: ['csidrivers'], resourceNames: ['a', 'b'] },
  ]);
  t.equal(
    describeMissing(missing),
    [
      '{APIGroups:[""], Resources:["configmaps"], Verbs:["get" "list" "watch"]}',
      '{APIGroups:[""], Resources:["secrets"], Verbs:["list" "watch"]}',
      '{APIGroups:["storage.svc.io"], Resources:["csidrivers"], ResourceNames:["a"], Verbs:["update"]}',
      '{APIGroups:["storage.svc.io"], Resources:["csidrivers"], ResourceNames:["b"], Verbs:["update"]}',
      '{NonResourceURLs:["/healthz"], Verbs:["get"]}',
      '{NonResourceURLs:["/metrics"], Verbs:["get"]}',
    ].join('\n'),
  );
  t.equal(compactString({ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }), '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}');
  t.equal(compactString({ verbs: ['get'], apiGroups: ['a"b'], resources: ['r'] }), '{APIGroups:["a\\"b"], Resources:["r"], Verbs:["get"]}', 'Go quoting');
});
