/**
 * The authorization matrix's model of upstream (test/helpers/authz-model.ts) itself, no server: its
 * request attributes against the rows of upstream's own requestinfo tests (TestGetAPIRequestInfo,
 * TestGetNonAPIRequestInfo, TestFieldSelectorParsing), its RBAC decisions against upstream's rule
 * semantics, and its routes against upstream's installer. The matrix is only as good as this model.
 */
import t from 'tap';
import { type Attrs, goUnescapePath, RbacModel, routeAnswer, type ServedKind, type ServedTypes, upstreamAttributes } from '../helpers/authz-model.js';

type Row = [method: string, url: string, verb: string, group: string, version: string, namespace: string, resource: string, subresource: string, name: string, parts: string[]];

// upstream's TestGetAPIRequestInfo
const rows: Row[] = [
  ['GET', '/api/v1/namespaces', 'list', '', 'v1', '', 'namespaces', '', '', ['namespaces']],
  ['GET', '/api/v1/namespaces/other', 'get', '', 'v1', 'other', 'namespaces', '', 'other', ['namespaces', 'other']],
  ['GET', '/api/v1/namespaces/other/pods', 'list', '', 'v1', 'other', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/namespaces/other/pods/foo', 'get', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
  ['HEAD', '/api/v1/namespaces/other/pods/foo', 'get', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
  ['GET', '/api/v1/pods', 'list', '', 'v1', '', 'pods', '', '', ['pods']],
  ['HEAD', '/api/v1/pods', 'list', '', 'v1', '', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/proxy/namespaces/other/pods/foo', 'proxy', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
  ['GET', '/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource', 'proxy', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo', 'subpath', 'not', 'a', 'subresource']],
  ['GET', '/api/v1/watch/pods', 'watch', '', 'v1', '', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/pods?watch=true', 'watch', '', 'v1', '', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/pods?watch=false', 'list', '', 'v1', '', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/watch/namespaces/other/pods', 'watch', '', 'v1', 'other', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/namespaces/other/pods?watch=1', 'watch', '', 'v1', 'other', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/namespaces/other/pods?watch=0', 'list', '', 'v1', 'other', 'pods', '', '', ['pods']],
  ['GET', '/api/v1/namespaces/other/pods/foo/status', 'get', '', 'v1', 'other', 'pods', 'status', 'foo', ['pods', 'foo', 'status']],
  ['GET', '/api/v1/namespaces/other/pods/foo/proxy/subpath', 'get', '', 'v1', 'other', 'pods', 'proxy', 'foo', ['pods', 'foo', 'proxy', 'subpath']],
  ['PUT', '/api/v1/namespaces/other/finalize', 'update', '', 'v1', 'other', 'namespaces', 'finalize', 'other', ['namespaces', 'other', 'finalize']],
  ['PUT', '/api/v1/namespaces/other/status', 'update', '', 'v1', 'other', 'namespaces', 'status', 'other', ['namespaces', 'other', 'status']],
  ['PATCH', '/api/v1/namespaces/other/pods/foo', 'patch', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
  ['DELETE', '/api/v1/namespaces/other/pods/foo', 'delete', '', 'v1', 'other', 'pods', '', 'foo', ['pods', 'foo']],
  ['POST', '/api/v1/namespaces/other/pods', 'create', '', 'v1', 'other', 'pods', '', '', ['pods']],
  ['DELETE', '/api/v1/nodes', 'deletecollection', '', 'v1', '', 'nodes', '', '', ['nodes']],
  ['DELETE', '/api/v1/namespaces/other/pods', 'deletecollection', '', 'v1', 'other', 'pods', '', '', ['pods']],
  ['DELETE', '/apis/extensions/v1/namespaces/other/pods', 'deletecollection', 'extensions', 'v1', 'other', 'pods', '', '', ['pods']],
  ['POST', '/apis/extensions/v1/namespaces/other/pods', 'create', 'extensions', 'v1', 'other', 'pods', '', '', ['pods']],
  ['POST', '/apis/extensions/v1beta3/namespaces/other/pods', 'create', 'extensions', 'v1beta3', 'other', 'pods', '', '', ['pods']],
  // what the matrix leans on beyond those rows
  ['GET', '/api/v1/namespaces/a/namespaces/victim', 'get', '', 'v1', 'a', 'namespaces', '', 'victim', ['namespaces', 'victim']],
  ['PUT', '/api/v1/namespaces/a/namespaces/victim/status', 'update', '', 'v1', 'a', 'namespaces', 'status', 'victim', ['namespaces', 'victim', 'status']],
  ['GET', '/api/v1/watch/namespaces/a/namespaces/victim', 'watch', '', 'v1', 'a', 'namespaces', '', 'victim', ['namespaces', 'victim']],
  ['DELETE', '/api/v1/watch/namespaces/a/configmaps/x', 'watch', '', 'v1', 'a', 'configmaps', '', 'x', ['configmaps', 'x']],
  ['GET', '/api/v1/namespaces/%61/configmaps/x', 'get', '', 'v1', 'a', 'configmaps', '', 'x', ['configmaps', 'x']],
  ['GET', '/api/v1/namespaces/a%2Fnamespaces%2Fvictim', 'get', '', 'v1', 'a', 'namespaces', '', 'victim', ['namespaces', 'victim']],
  ['GET', '/api/v1/namespaces/a/configmaps?watch=f', 'watch', '', 'v1', 'a', 'configmaps', '', '', ['configmaps']],
  ['GET', '/api/v1/namespaces/a/configmaps?watch=', 'watch', '', 'v1', 'a', 'configmaps', '', '', ['configmaps']],
  ['GET', '/api/v1/namespaces/a/configmaps?watch=FALSE', 'list', '', 'v1', 'a', 'configmaps', '', '', ['configmaps']],
];

t.test("request attributes: upstream's requestinfo rows", async (t) => {
  for (const [method, url, verb, group, version, namespace, resource, subresource, name, parts] of rows) {
    const q = url.indexOf('?');
    const a = upstreamAttributes(method, q < 0 ? url : url.slice(0, q), q < 0 ? '' : url.slice(q + 1))!;
    t.same(
      { resource: a.isResourceRequest, verb: a.verb, group: a.apiGroup, version: a.apiVersion, namespace: a.namespace, res: a.resource, subresource: a.subresource, name: a.name, parts: a.parts },
      { resource: true, verb, group, version, namespace, res: resource, subresource, name, parts },
      `${method} ${url}`,
    );
  }
});

t.test("non-resource paths: upstream's TestGetNonAPIRequestInfo", async (t) => {
  const cases: [string, boolean][] = [
    ['/api/version/resource', true],
    ['/apis/group/version/resource/name/subresource', true],
    ['/api/version/resource/name/subresource', true],
    ['/apis/batch/v1/job', true],
    ['/not-api/version/resource', false],
    ['/apis/extensions/v1beta1', false],
    ['/apis/extensions/v1beta1/', false],
    ['/api/version', false],
    ['/api', false],
    ['/', false],
    ['', false],
    ['/API/v1/namespaces/victim', false],
  ];
  for (const [url, resource] of cases) t.equal(upstreamAttributes('GET', url)!.isResourceRequest, resource, url);
  t.equal(goUnescapePath('/api/v1/namespaces/%zz'), undefined, 'an invalid escape is a bad request line');
  t.equal(goUnescapePath('/a%2Fb%2fc+d'), '/a/b/c+d');
});

t.test("list and watch names from the field selector: upstream's TestFieldSelectorParsing", async (t) => {
  const cases: [string, string, string][] = [
    ['', 'list', ''],
    ['fieldSelector=metadata.name=name1', 'list', 'name1'],
    ['watch=true&fieldSelector=metadata.name=name1', 'watch', 'name1'],
    ['fieldSelector=foo=bar', 'list', ''],
    ['fieldSelector=metadata.name=name1,foo', 'list', ''],
    ['fieldSelector=metadata.name=name1,foo&watch=true', 'watch', ''],
    ['fieldSelector=metadata.name=name1,foo&watch=false', 'list', ''],
    ['fieldSelector=metadata.name==name1', 'list', 'name1'],
    ['fieldSelector=metadata.name!=name1', 'list', ''],
    ['fieldSelector=metadata.namespace=a,metadata.name=name1', 'list', 'name1'],
    ['fieldSelector=metadata.name=a%2Fb', 'list', ''],
  ];
  for (const [q, verb, name] of cases) {
    const a = upstreamAttributes('GET', '/apis/group/version/resource', q)!;
    t.same([a.verb, a.name], [verb, name], q || '(none)');
  }
  const legacy = upstreamAttributes('GET', '/api/v1/watch/namespaces/a/configmaps', 'fieldSelector=metadata.name=x')!;
  t.same([legacy.verb, legacy.name], ['watch', ''], 'a /watch/ path takes no name from its selector');
});

const attrs = (method: string, url: string): Attrs => {
  const q = url.indexOf('?');
  return upstreamAttributes(method, q < 0 ? url : url.slice(0, q), q < 0 ? '' : url.slice(q + 1))!;
};

t.test('RBAC: bindings, scopes, wildcards, subresources, resource names, group spellings', async (t) => {
  const m = new RbacModel((g) => (g === 'storage.k8s.io' ? 'storage.svc.io' : g));
  m.role('a', 'cm', [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['configmaps'] }]);
  m.role('a', 'one', [{ verbs: ['get', 'update'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['one'] }]);
  m.clusterRoles.set('status', [{ verbs: ['get'], apiGroups: ['*'], resources: ['*/status'] }]);
  m.clusterRoles.set('ns-status', [{ verbs: ['update'], apiGroups: [''], resources: ['namespaces/status'] }]);
  m.clusterRoles.set('storage', [{ verbs: ['*'], apiGroups: ['storage.k8s.io'], resources: ['csidrivers'] }]);
  m.clusterRoles.set('discovery', [{ verbs: ['get'], nonResourceURLs: ['/api', '/api/*'] }]);
  m.bindings.push(
    { namespace: 'a', roleRef: { kind: 'Role', name: 'cm' }, subjects: [{ kind: 'User', name: 'u' }] },
    { namespace: 'a', roleRef: { kind: 'Role', name: 'one' }, subjects: [{ kind: 'Group', name: 'team' }] },
    { namespace: 'a', roleRef: { kind: 'ClusterRole', name: 'status' }, subjects: [{ kind: 'User', name: 'u' }] },
    { namespace: 'a', roleRef: { kind: 'ClusterRole', name: 'ns-status' }, subjects: [{ kind: 'User', name: 'u' }] },
    { roleRef: { kind: 'ClusterRole', name: 'storage' }, subjects: [{ kind: 'User', name: 'u' }] },
    { roleRef: { kind: 'ClusterRole', name: 'discovery' }, subjects: [{ kind: 'Group', name: 'system:authenticated' }] },
  );
  const u = { name: 'u', groups: ['system:authenticated'] };
  const g = { name: 'g', groups: ['team', 'system:authenticated'] };
  const cases: [typeof u, string, string, boolean, string][] = [
    [u, 'GET', '/api/v1/namespaces/a/configmaps/x', true, 'a RoleBinding grants in its namespace'],
    [u, 'GET', '/api/v1/namespaces/b/configmaps/x', false, 'and nowhere else'],
    [u, 'GET', '/api/v1/configmaps', false, 'not across namespaces'],
    [u, 'DELETE', '/api/v1/namespaces/a/configmaps/x', false, 'only its verbs'],
    [u, 'GET', '/api/v1/namespaces/a/secrets/x', false, 'only its resources'],
    [g, 'GET', '/api/v1/namespaces/a/configmaps/one', true, 'through a group, the named object'],
    [g, 'GET', '/api/v1/namespaces/a/configmaps/two', false, 'not another name'],
    [g, 'GET', '/api/v1/namespaces/a/configmaps?fieldSelector=metadata.name%3Done', false, 'not a list (list is not among its verbs)'],
    [g, 'POST', '/api/v1/namespaces/a/configmaps', false, 'resourceNames never match a request without a name'],
    [u, 'GET', '/api/v1/namespaces/a/status', true, '*/status matches namespaces/status'],
    [u, 'GET', '/api/v1/namespaces/a/namespaces/victim/status', true, '...and so the same attributes through a namespace around namespaces'],
    [u, 'GET', '/api/v1/namespaces/a', false, '*/status is not the resource itself'],
    [u, 'PUT', '/api/v1/namespaces/a/status', true, 'resource/subresource'],
    [u, 'PUT', '/api/v1/namespaces/b/status', false, 'in the binding namespace only (the namespace of /namespaces/b/status is b)'],
    [u, 'GET', '/apis/storage.svc.io/v1/csidrivers/x', true, 'a rule naming storage.k8s.io grants storage.svc.io'],
    [u, 'GET', '/apis/storage.k8s.io/v1/csidrivers/x', true, 'and storage.k8s.io'],
    [u, 'GET', '/apis/STORAGE.k8s.io/v1/csidrivers/x', false, 'group names are case-sensitive'],
    [u, 'GET', '/api/v1', true, 'non-resource URLs from ClusterRoleBindings'],
    [u, 'GET', '/API/v1', false, 'non-resource URLs are case-sensitive'],
  ];
  for (const [who, method, url, allowed, why] of cases) t.equal(m.allows(who, attrs(method, url)), allowed, `${who.name} ${method} ${url}: ${why}`);
});

t.test("routes: upstream's installer for an allowed request", async (t) => {
  const kind = (group: string, resource: string, namespaced: boolean, verbs: string[], subresources: Record<string, string[]> = {}): ServedKind => ({
    group,
    spellings: [group],
    version: 'v1',
    resource,
    kind: resource,
    namespaced,
    verbs: new Set(verbs),
    subresources: new Map(Object.entries(subresources).map(([k, v]) => [k, new Set(v)])),
  });
  const all = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
  const kinds = [
    kind('', 'namespaces', false, ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'], { status: ['get', 'patch', 'update'], finalize: ['update'] }),
    kind('', 'configmaps', true, all),
    kind('', 'serviceaccounts', true, all, { token: ['create'] }),
    kind('storage.svc.io', 'csidrivers', false, all),
    kind('authorization.svc.io', 'selfsubjectaccessreviews', false, ['create']),
  ];
  const types: ServedTypes = {
    get: (g, v, r) => kinds.find((k) => k.group === g && k.version === v && k.resource === r),
    canonical: (g) => (g === 'storage.k8s.io' ? 'storage.svc.io' : g),
  };
  const cases: [string, string, boolean, number][] = [
    ['GET', '/api/v1/namespaces/a/namespaces/victim', true, 404],
    ['GET', '/api/v1/namespaces/a/namespaces', true, 404],
    ['GET', '/api/v1/namespaces/a/namespaces?watch=1', true, 404],
    ['GET', '/api/v1/watch/namespaces/a/namespaces/victim', true, 404],
    ['PUT', '/api/v1/namespaces/a/namespaces/victim/status', true, 404],
    ['DELETE', '/api/v1/namespaces/a/namespaces/victim', true, 404],
    ['POST', '/api/v1/namespaces/a/namespaces', true, 404],
    ['GET', '/apis/storage.k8s.io/v1/namespaces/a/csidrivers/x', true, 404],
    ['GET', '/api/v1/namespaces/victim', true, 200],
    ['GET', '/api/v1/namespaces/victim/status', true, 200],
    ['PUT', '/api/v1/namespaces/victim/finalize', true, 200],
    ['GET', '/api/v1/namespaces/victim/finalize', true, 405],
    ['GET', '/api/v1/watch/namespaces/victim', true, 200],
    ['DELETE', '/api/v1/namespaces', false, 405],
    ['GET', '/api/v1/configmaps/x', true, 404],
    ['GET', '/api/v1/configmaps', false, 200],
    ['POST', '/api/v1/configmaps', false, 405],
    ['DELETE', '/api/v1/configmaps', false, 405],
    ['DELETE', '/api/v1/namespaces/a/configmaps', false, 200],
    ['PUT', '/api/v1/namespaces/a/configmaps', false, 405],
    ['GET', '/api/v1/namespaces/a/configmaps/nope', false, 404],
    ['POST', '/api/v1/namespaces/a/configmaps/x', true, 405],
    ['DELETE', '/api/v1/watch/namespaces/a/configmaps/x', true, 405],
    ['GET', '/api/v1/watch/namespaces/a/configmaps/x/status', true, 404],
    ['POST', '/api/v1/namespaces/a/serviceaccounts/x/token', true, 201],
    ['GET', '/api/v1/namespaces/a/serviceaccounts/x/token', true, 405],
    ['POST', '/api/v1/namespaces/a/serviceaccounts/nope/token', false, 404],
    ['POST', '/apis/authorization.svc.io/v1/selfsubjectaccessreviews', false, 201],
    ['GET', '/apis/authorization.svc.io/v1/selfsubjectaccessreviews', false, 405],
    ['POST', '/apis/authorization.svc.io/v1/namespaces/a/selfsubjectaccessreviews', false, 404],
    ['GET', '/api/v1/Namespaces/victim', true, 404],
    ['GET', '/api/v1/namespaces/b/../a/configmaps/x', true, 404],
  ];
  for (const [method, url, exists, code] of cases) t.equal(routeAnswer(types, attrs(method, url), method, exists), code, `${method} ${url}`);
});
