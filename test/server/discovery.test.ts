import t from 'tap';
import { builtinResourceTypes } from '../../core/registry/catalog.js';
import { buildDiscovery, unlistedGroupVersions } from '../../core/server/discovery.js';

t.test('autoregister-completion: every served group version is listed by discovery', async (t) => {
  const docs = buildDiscovery(builtinResourceTypes, '127.0.0.1:6443');
  t.same(unlistedGroupVersions(docs, builtinResourceTypes), [], 'all listed');
  const coreOnly = buildDiscovery(
    builtinResourceTypes.filter((rt) => rt.group === ''),
    '127.0.0.1:6443',
  );
  t.same(unlistedGroupVersions(coreOnly, builtinResourceTypes), ['v1.apiextensions.svc.io', 'v1.authentication.svc.io', 'v1.authorization.svc.io', 'v1.coordination.svc.io', 'v1.rbac.authorization.svc.io', 'v1.storage.svc.io'], 'named as APIServices, sorted');
  const withoutSecrets = buildDiscovery(
    builtinResourceTypes.filter((rt) => rt.plural !== 'secrets'),
    '127.0.0.1:6443',
  );
  t.same(unlistedGroupVersions(withoutSecrets, builtinResourceTypes), ['v1'], 'a resource missing from a listed group version counts');
});

t.test('discovery entries carry upstream v1.32 short names and no categories for the served kinds', async (t) => {
  const docs = buildDiscovery(builtinResourceTypes, '127.0.0.1:6443');
  const expected: [string, string, string[] | undefined][] = [
    ['/api/v1', 'namespaces', ['ns']],
    ['/api/v1', 'configmaps', ['cm']],
    ['/api/v1', 'secrets', undefined],
    ['/api/v1', 'serviceaccounts', ['sa']],
    ['/api/v1', 'events', ['ev']],
    ['/apis/storage.svc.io/v1', 'csidrivers', undefined],
    ['/apis/coordination.svc.io/v1', 'leases', undefined],
  ];
  for (const [path, name, shortNames] of expected) {
    const list = docs.byPath.get(path) as { resources: Record<string, unknown>[] };
    const e = list.resources.find((r) => r.name === name);
    t.same(e?.shortNames, shortNames, `${name} shortNames`);
    t.notOk(e && 'categories' in e, `${name} is in no category`);
  }
});
