import t from 'tap';
import { customResourceTypes } from '../../core/apiextensions/builder.js';
import type { CustomResourceDefinition } from '../../core/apiextensions/types.js';
import { builtinResourceTypes } from '../../core/registry/catalog.js';
import { buildDiscovery, unlistedGroupVersions } from '../../core/server/discovery.js';

t.test('autoregister-completion: every served group version is listed by discovery', async (t) => {
  const docs = buildDiscovery(builtinResourceTypes, '127.0.0.1:6443');
  t.same(unlistedGroupVersions(docs, builtinResourceTypes), [], 'all listed');
  const coreOnly = buildDiscovery(
    builtinResourceTypes.filter((rt) => rt.group === ''),
    '127.0.0.1:6443',
  );
  t.same(unlistedGroupVersions(coreOnly, builtinResourceTypes), ['v1.admissionregistration.svc.io', 'v1.apiextensions.svc.io', 'v1.apiregistration.svc.io', 'v1.authentication.svc.io', 'v1.authorization.svc.io', 'v1.certificates.svc.io', 'v1.coordination.svc.io', 'v1.flowcontrol.apiserver.svc.io', 'v1.rbac.authorization.svc.io', 'v1.storage.svc.io'], 'named as APIServices, sorted');
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
    ['/apis/certificates.svc.io/v1', 'certificatesigningrequests', ['csr']],
  ];
  for (const [path, name, shortNames] of expected) {
    const list = docs.byPath.get(path) as { resources: Record<string, unknown>[] };
    const e = list.resources.find((r) => r.name === name);
    t.same(e?.shortNames, shortNames, `${name} shortNames`);
    t.notOk(e && 'categories' in e, `${name} is in no category`);
  }
});

t.test("a subresource served as another kind names that kind's group, version and kind in both discovery forms", async (t) => {
  const crd = {
    apiVersion: 'apiextensions.svc.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { replicas: { type: 'integer' } } }, status: { type: 'object', properties: { replicas: { type: 'integer' } } } } } },
          subresources: { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' } },
        },
      ],
    },
  } as unknown as CustomResourceDefinition;
  const types = [...builtinResourceTypes, ...customResourceTypes(crd, 1)];
  const docs = buildDiscovery(types, '127.0.0.1:6443');
  const legacy = (path: string, name: string) => (docs.byPath.get(path) as { resources: Record<string, unknown>[] }).resources.find((r) => r.name === name);
  // upstream: what kubectl scale and the HPA read (autoscaling/v1 Scale), and the token request's own kind
  t.same(legacy('/apis/example.com/v1', 'widgets/scale'), { name: 'widgets/scale', singularName: '', namespaced: true, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'] });
  t.same(legacy('/apis/example.com/v1', 'widgets/status'), { name: 'widgets/status', singularName: '', namespaced: true, kind: 'Widget', verbs: ['get', 'patch', 'update'] });
  t.same(legacy('/api/v1', 'serviceaccounts/token'), { name: 'serviceaccounts/token', singularName: '', namespaced: true, group: 'authentication.svc.io', version: 'v1', kind: 'TokenRequest', verbs: ['create'] });

  type Entry = { resource: string; subresources?: { subresource: string; responseKind: unknown; verbs: string[] }[] };
  const aggregated = (group: string, resource: string): Entry | undefined => {
    const groups = (group === '' ? docs.aggregated.api : docs.aggregated.apis) as { metadata: { name?: string }; versions: { resources: Entry[] }[] }[];
    const g = group === '' ? groups[0] : groups.find((x) => x.metadata.name === group);
    return g?.versions[0]?.resources.find((r) => r.resource === resource);
  };
  t.same(aggregated('example.com', 'widgets')?.subresources, [
    { subresource: 'status', responseKind: { group: 'example.com', version: 'v1', kind: 'Widget' }, verbs: ['get', 'patch', 'update'] },
    { subresource: 'scale', responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' }, verbs: ['get', 'patch', 'update'] },
  ]);
  t.same(aggregated('', 'serviceaccounts')?.subresources, [
    { subresource: 'token', responseKind: { group: 'authentication.svc.io', version: 'v1', kind: 'TokenRequest' }, verbs: ['create'] },
  ]);
});
