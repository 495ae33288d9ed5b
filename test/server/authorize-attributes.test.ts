import t from 'tap';
import { requestInfoFor } from '../../core/request/request-info.js';
import { attributesOf } from '../../core/server/stages/authorize.js';

const user = { username: 'u', groups: [] };

function attrs(method: string, url: string) {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  return attributesOf({ user, path, query }, requestInfoFor(method, path, query));
}

t.test('authorizers see the selectors of a list, watch or deletecollection, except on the deprecated /watch/ paths (as upstream)', async (t) => {
  const sel = '?fieldSelector=spec.x%3Dy&labelSelector=app%3Dweb';
  t.ok(attrs('GET', `/api/v1/namespaces/a/configmaps${sel}`).selectors, 'list');
  t.ok(attrs('GET', `/api/v1/namespaces/a/configmaps${sel}&watch=1`).selectors, 'watch by parameter');
  t.ok(attrs('DELETE', `/api/v1/namespaces/a/configmaps${sel}`).selectors, 'deletecollection');
  t.notOk(attrs('GET', `/api/v1/watch/namespaces/a/configmaps${sel}`).selectors, 'watch by path prefix: none');
  t.notOk(attrs('GET', `/api/v1/namespaces/a/configmaps/x${sel}`).selectors, 'get: none');
});
