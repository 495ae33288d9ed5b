import t from 'tap';
import { requestInfoFor } from '../../core/request/request-info.js';

type Row = [method: string, url: string, verb: string, group: string, version: string, namespace: string, resource: string, subresource: string, name: string, resourceRequest?: boolean];

// One row per request, as upstream's requestinfo table: method and URL in, what authorization sees out.
const rows: Row[] = [
  ['GET', '/api/v1/namespaces', 'list', '', 'v1', '', 'namespaces', '', ''],
  ['GET', '/api/v1/namespaces/other', 'get', '', 'v1', 'other', 'namespaces', '', 'other'],
  ['GET', '/api/v1/namespaces/other/configmaps/cm1', 'get', '', 'v1', 'other', 'configmaps', '', 'cm1'],
  ['HEAD', '/api/v1/namespaces/other/configmaps/cm1', 'get', '', 'v1', 'other', 'configmaps', '', 'cm1'],
  ['GET', '/api/v1/namespaces/other/configmaps', 'list', '', 'v1', 'other', 'configmaps', '', ''],
  ['HEAD', '/api/v1/namespaces/other/configmaps', 'list', '', 'v1', 'other', 'configmaps', '', ''],
  ['GET', '/api/v1/configmaps', 'list', '', 'v1', '', 'configmaps', '', ''],
  ['GET', '/api/v1/configmaps?watch=true', 'watch', '', 'v1', '', 'configmaps', '', ''],
  ['GET', '/api/v1/configmaps?watch=1', 'watch', '', 'v1', '', 'configmaps', '', ''],
  ['GET', '/api/v1/configmaps?watch=false', 'list', '', 'v1', '', 'configmaps', '', ''],
  ['GET', '/api/v1/configmaps?watch=0', 'list', '', 'v1', '', 'configmaps', '', ''],
  // upstream's parameter codec: only `0` and `false` (any case) are false
  ['GET', '/api/v1/configmaps?watch=f', 'watch', '', 'v1', '', 'configmaps', '', ''],
  ['GET', '/api/v1/configmaps?watch=F', 'watch', '', 'v1', '', 'configmaps', '', ''],
  ['GET', '/api/v1/configmaps?watch=no', 'watch', '', 'v1', '', 'configmaps', '', ''],
  ['GET', '/api/v1/configmaps?watch=', 'watch', '', 'v1', '', 'configmaps', '', ''],
  ['GET', '/api/v1/configmaps?watch', 'watch', '', 'v1', '', 'configmaps', '', ''],
  ['GET', '/api/v1/configmaps?watch=FaLsE', 'list', '', 'v1', '', 'configmaps', '', ''],
  ['GET', '/api/v1/configmaps?watch=false&watch=true', 'list', '', 'v1', '', 'configmaps', '', ''],
  ['GET', '/api/v1/configmaps?watch=00', 'watch', '', 'v1', '', 'configmaps', '', ''],
  ['GET', '/api/v1/watch/configmaps', 'watch', '', 'v1', '', 'configmaps', '', ''],
  ['GET', '/api/v1/watch/namespaces/other/configmaps', 'watch', '', 'v1', 'other', 'configmaps', '', ''],
  ['GET', '/api/v1/watch/namespaces/other/configmaps/cm1', 'watch', '', 'v1', 'other', 'configmaps', '', 'cm1'],
  // the /watch/ prefix sets the verb whatever the method (its routes then answer 405 to anything but GET)
  ['DELETE', '/api/v1/watch/namespaces/other/configmaps/cm1', 'watch', '', 'v1', 'other', 'configmaps', '', 'cm1'],
  ['PUT', '/api/v1/watch/namespaces/other/configmaps', 'watch', '', 'v1', 'other', 'configmaps', '', ''],
  ['POST', '/apis/storage.svc.io/v1/watch/csidrivers', 'watch', 'storage.svc.io', 'v1', '', 'csidrivers', '', ''],
  ['GET', '/api/v1/namespaces/other/configmaps?fieldSelector=metadata.name%3Dcm1', 'list', '', 'v1', 'other', 'configmaps', '', 'cm1'],
  ['GET', '/api/v1/namespaces/other/configmaps?fieldSelector=metadata.name%3D%3Dcm1', 'list', '', 'v1', 'other', 'configmaps', '', 'cm1'],
  ['GET', '/api/v1/namespaces/other/configmaps?fieldSelector=metadata.name%21%3Dcm1', 'list', '', 'v1', 'other', 'configmaps', '', ''],
  ['GET', '/api/v1/namespaces/other/configmaps?fieldSelector=metadata.name%3Da%2Fb', 'list', '', 'v1', 'other', 'configmaps', '', ''],
  // the selector as the list parses it: terms sorted, the first exact name; one it refuses names nothing
  ['GET', '/api/v1/namespaces/other/configmaps?fieldSelector=metadata.name%3Db,metadata.name%3Da', 'list', '', 'v1', 'other', 'configmaps', '', 'a'],
  ['GET', '/api/v1/namespaces/other/configmaps?fieldSelector=metadata.name%3Da%3Db', 'list', '', 'v1', 'other', 'configmaps', '', ''],
  ['GET', '/api/v1/namespaces/other/configmaps?fieldSelector=metadata.name%20%3D%20cm1', 'list', '', 'v1', 'other', 'configmaps', '', ''],
  // a query that does not decode as ListOptions narrows to no name (upstream's decode error path)
  ['GET', '/api/v1/namespaces/other/configmaps?fieldSelector=metadata.name%3Dcm1&limit=abc', 'list', '', 'v1', 'other', 'configmaps', '', ''],
  ['GET', '/api/v1/namespaces/other/configmaps?fieldSelector=metadata.name%3Dcm1&timeoutSeconds=1.5', 'list', '', 'v1', 'other', 'configmaps', '', ''],
  ['GET', '/api/v1/namespaces/other/configmaps?fieldSelector=metadata.name%3Dcm1&labelSelector=a%20b', 'list', '', 'v1', 'other', 'configmaps', '', ''],
  ['GET', '/api/v1/namespaces/other/configmaps?fieldSelector=metadata.name%3Dcm1&limit=5&timeoutSeconds=&labelSelector=a%3Db', 'list', '', 'v1', 'other', 'configmaps', '', 'cm1'],
  ['GET', '/api/v1/namespaces/other/configmaps?fieldSelector=metadata.name%3Dcm1&watch=f&limit=abc', 'watch', '', 'v1', 'other', 'configmaps', '', ''],
  ['GET', '/api/v1/namespaces/other/configmaps?fieldSelector=metadata.name%3Dcm1%5C,x', 'list', '', 'v1', 'other', 'configmaps', '', 'cm1,x'],
  ['POST', '/api/v1/namespaces/other/configmaps', 'create', '', 'v1', 'other', 'configmaps', '', ''],
  ['PUT', '/api/v1/namespaces/other/configmaps/cm1', 'update', '', 'v1', 'other', 'configmaps', '', 'cm1'],
  ['PATCH', '/api/v1/namespaces/other/configmaps/cm1', 'patch', '', 'v1', 'other', 'configmaps', '', 'cm1'],
  ['DELETE', '/api/v1/namespaces/other/configmaps/cm1', 'delete', '', 'v1', 'other', 'configmaps', '', 'cm1'],
  ['DELETE', '/api/v1/namespaces/other/configmaps', 'deletecollection', '', 'v1', 'other', 'configmaps', '', ''],
  ['PUT', '/api/v1/namespaces/other/finalize', 'update', '', 'v1', 'other', 'namespaces', 'finalize', 'other'],
  ['PUT', '/api/v1/namespaces/other/status', 'update', '', 'v1', 'other', 'namespaces', 'status', 'other'],
  ['GET', '/api/v1/namespaces/other/serviceaccounts/default/token', 'get', '', 'v1', 'other', 'serviceaccounts', 'token', 'default'],
  ['POST', '/api/v1/namespaces/other/serviceaccounts/default/token', 'create', '', 'v1', 'other', 'serviceaccounts', 'token', 'default'],
  ['GET', '/apis/storage.svc.io/v1/csidrivers', 'list', 'storage.svc.io', 'v1', '', 'csidrivers', '', ''],
  ['GET', '/apis/storage.svc.io/v1/csidrivers/d1', 'get', 'storage.svc.io', 'v1', '', 'csidrivers', '', 'd1'],
  ['GET', '/apis/coordination.svc.io/v1/namespaces/svc-node-lease/leases/n1', 'get', 'coordination.svc.io', 'v1', 'svc-node-lease', 'leases', '', 'n1'],
  ['GET', '/apis/coordination.svc.io/v1/leases', 'list', 'coordination.svc.io', 'v1', '', 'leases', '', ''],
  ['GET', '/apis/rbac.authorization.svc.io/v1/clusterroles/admin', 'get', 'rbac.authorization.svc.io', 'v1', '', 'clusterroles', '', 'admin'],
  ['PROPFIND', '/api/v1/namespaces/other/configmaps', 'propfind', '', 'v1', 'other', 'configmaps', '', ''],
  // a namespace around a cluster-scoped kind: judged inside the namespace (routing then answers 404)
  ['GET', '/api/v1/namespaces/a/namespaces/victim', 'get', '', 'v1', 'a', 'namespaces', '', 'victim'],
  ['DELETE', '/api/v1/namespaces/a/namespaces/victim', 'delete', '', 'v1', 'a', 'namespaces', '', 'victim'],
  ['GET', '/api/v1/namespaces/a/namespaces', 'list', '', 'v1', 'a', 'namespaces', '', ''],
  // non-resource requests: the lower-case method is the verb
  ['GET', '/', 'get', '', '', '', '', '', '', false],
  ['GET', '/api', 'get', '', '', '', '', '', '', false],
  ['GET', '/api/v1', 'get', '', 'v1', '', '', '', '', false],
  ['GET', '/apis', 'get', '', '', '', '', '', '', false],
  ['GET', '/apis/storage.svc.io', 'get', '', '', '', '', '', '', false],
  ['GET', '/apis/storage.svc.io/v1', 'get', '', '', '', '', '', '', false],
  ['GET', '/healthz', 'get', '', '', '', '', '', '', false],
  ['GET', '/livez/ping', 'get', '', '', '', '', '', '', false],
  ['POST', '/version', 'post', '', '', '', '', '', '', false],
  ['HEAD', '/readyz', 'head', '', '', '', '', '', '', false],
  ['GET', '/openapi/v3/apis/storage.svc.io/v1', 'get', '', '', '', '', '', '', false],
  ['GET', '/other/api/v1/configmaps', 'get', '', '', '', '', '', '', false],
];

t.test('namespacedPath tells /namespaces/<ns>/<resource> from a namespace object addressed by its name', async (t) => {
  const cases: [string, boolean][] = [
    ['/api/v1/namespaces', false],
    ['/api/v1/namespaces/a', false],
    ['/api/v1/namespaces/a/status', false],
    ['/api/v1/namespaces/a/finalize', false],
    ['/api/v1/watch/namespaces/a', false],
    ['/api/v1/configmaps', false],
    ['/apis/storage.svc.io/v1/csidrivers/d', false],
    ['/api/v1/namespaces/a/namespaces', true],
    ['/api/v1/namespaces/a/namespaces/b', true],
    ['/api/v1/namespaces/a/namespaces/b/status', true],
    ['/api/v1/namespaces/a/configmaps/x', true],
    ['/api/v1/watch/namespaces/a/configmaps', true],
    ['/apis/storage.svc.io/v1/namespaces/a/csidrivers/d', true],
  ];
  for (const [path, want] of cases) t.equal(requestInfoFor('GET', path, new URLSearchParams()).namespacedPath, want, path);
});

t.test('verbFromPath marks a verb taken from the /watch/ prefix, whatever the method', async (t) => {
  const cases: [string, string, boolean, string][] = [
    ['GET', '/api/v1/watch/namespaces/a/configmaps', true, 'watch'],
    ['DELETE', '/api/v1/watch/namespaces/a/configmaps/x', true, 'watch'],
    ['GET', '/api/v1/namespaces/a/configmaps?watch=1', false, 'watch'],
    ['GET', '/api/v1/namespaces/a/configmaps', false, 'list'],
  ];
  for (const [method, url, want, verb] of cases) {
    const q = url.indexOf('?');
    const info = requestInfoFor(method, q < 0 ? url : url.slice(0, q), new URLSearchParams(q < 0 ? '' : url.slice(q + 1)));
    t.equal(info.verbFromPath, want, `${method} ${url}`);
    t.equal(info.verb, verb, `${method} ${url}: verb`);
  }
});

t.test('request info: method, path and query map to verb, group, version, namespace, resource, subresource, name', async (t) => {
  for (const [method, url, verb, group, version, namespace, resource, subresource, name, resourceRequest = true] of rows) {
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const info = requestInfoFor(method, path, new URLSearchParams(q < 0 ? '' : url.slice(q + 1)));
    t.same(
      { isResourceRequest: info.isResourceRequest, verb: info.verb, apiGroup: info.apiGroup, namespace: info.namespace, resource: info.resource, subresource: info.subresource, name: info.name },
      { isResourceRequest: resourceRequest, verb, apiGroup: group, namespace, resource, subresource, name },
      `${method} ${url}`,
    );
    if (resourceRequest) t.equal(info.apiVersion, version, `${method} ${url}: version`);
  }
});
