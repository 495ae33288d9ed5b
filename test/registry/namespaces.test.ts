import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { NAMESPACE_NAME_LABEL, namespaces } from '../../core/registry/core/namespaces.js';
import { cells, columnNames, create, fieldNames, stored, update } from './kind-harness.js';

const ns = (name: string, extra: Record<string, unknown> = {}): ApiObject => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name }, ...extra });

t.test('namespace declaration: cluster-scoped, short name ns, no deletecollection', async (t) => {
  t.equal(namespaces.namespaced, false);
  t.same(namespaces.shortNames, ['ns']);
  t.equal(namespaces.singular, 'namespace');
  t.same(namespaces.verbs, ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch']);
  t.same(fieldNames(namespaces), ['kind', 'apiVersion', 'metadata', 'spec', 'status']);
  t.same(Object.keys(namespaces.subresources ?? {}), ['status', 'finalize']);
  t.same(namespaces.subresources?.finalize?.verbs, ['update']);
  t.same(namespaces.subresources?.status?.verbs, ['get', 'patch', 'update']);
  const spec = namespaces.schema.fields.spec;
  t.equal(spec?.kind === 'struct' && spec.fields.finalizers?.kind === 'list' && spec.fields.finalizers.listType, 'atomic', 'spec.finalizers is an atomic list');
  const status = namespaces.schema.fields.status;
  const conds = status?.kind === 'struct' ? status.fields.conditions : undefined;
  t.match(conds, { kind: 'list', listType: 'map', listMapKeys: ['type'], patchStrategy: 'merge', patchMergeKey: 'type' });
});

t.test('namespace create: label, Active phase and the svc finalizer', async (t) => {
  const out = create(namespaces, ns('team-a', { status: { phase: 'Terminating' } }));
  t.same(out.errors, []);
  t.equal(out.obj.metadata.labels?.[NAMESPACE_NAME_LABEL], 'team-a', 'svc.io/metadata.name label set to the name');
  t.same(out.obj.status, { phase: 'Active' }, 'status reset to Active');
  t.same(out.obj.spec, { finalizers: ['svc'] });
  const extra = create(namespaces, ns('b', { spec: { finalizers: ['example.com/cleanup'] } }));
  t.same((extra.obj.spec as { finalizers: string[] }).finalizers, ['example.com/cleanup', 'svc'], 'svc is appended to given finalizers');
  const already = create(namespaces, ns('c', { spec: { finalizers: ['svc'] } }));
  t.same((already.obj.spec as { finalizers: string[] }).finalizers, ['svc'], 'svc is not duplicated');
});

t.test('namespace defaults apply on every write: label and phase', async (t) => {
  const obj = ns('x', { metadata: { name: 'x', labels: { [NAMESPACE_NAME_LABEL]: 'spoofed' } } });
  namespaces.defaults!(obj);
  t.equal(obj.metadata.labels?.[NAMESPACE_NAME_LABEL], 'x');
  t.same(obj.status, { phase: 'Active' });
});

t.test('namespace validation rules', async (t) => {
  const rows: [string, ApiObject, string[]][] = [
    ['names are DNS labels: no dots', ns('a.b'), ['metadata.name: Invalid value: "a.b": must not contain dots']],
    [
      'names are DNS labels: no capitals',
      ns('Team'),
      [
        "metadata.name: Invalid value: \"Team\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
      ],
    ],
    [
      'spec.finalizers must be standard or domain-qualified',
      ns('a', { spec: { finalizers: ['cleanup'] } }),
      ['spec.finalizers: Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified'],
    ],
    [
      'metadata.finalizers must be standard or domain-qualified (indexed)',
      ns('a', { metadata: { name: 'a', finalizers: ['x.io/y', 'cleanup'] } }),
      ['metadata.finalizers[1]: Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified'],
    ],
    ['the namespace field is forbidden', ns('a', { metadata: { name: 'a', namespace: 'b' } }), ['metadata.namespace: Forbidden: not allowed on this type']],
  ];
  for (const [name, obj, want] of rows) t.same(create(namespaces, obj).errors, want, name);
});

t.test('namespace update keeps spec.finalizers and status from the stored object', async (t) => {
  const live = stored(namespaces, ns('a'));
  const out = update(namespaces, { ...ns('a', { spec: { finalizers: [] }, status: { phase: 'Terminating' } }), metadata: { ...live.metadata, labels: {} } }, live);
  t.same(out.errors, []);
  t.same(out.obj.spec, { finalizers: ['svc'] });
  t.same(out.obj.status, { phase: 'Active' });
  t.equal(out.obj.metadata.labels?.[NAMESPACE_NAME_LABEL], 'a', 'the name label comes back');
});

t.test('namespace status subresource changes only status, with the phase rule', async (t) => {
  const live = stored(namespaces, ns('a'));
  const ok = update(namespaces, { ...live, spec: { finalizers: [] }, status: { phase: 'Active', conditions: [{ type: 'X', status: 'True' }] } }, live, 'status');
  t.same(ok.errors, []);
  t.same(ok.obj.spec, { finalizers: ['svc'] }, 'spec comes from the stored object');
  t.same((ok.obj.status as { conditions: unknown[] }).conditions, [{ type: 'X', status: 'True' }]);
  const bad = update(namespaces, { ...live, status: { phase: 'Terminating' } }, live, 'status');
  t.same(bad.errors, ['status.Phase: Invalid value: "Terminating": may only be \'Active\' if `deletionTimestamp` is empty']);
  const deleting = { ...live, metadata: { ...live.metadata, deletionTimestamp: '2024-01-02T00:00:00Z' } };
  const stillActive = update(namespaces, { ...deleting, status: { phase: 'Active' } }, deleting, 'status');
  t.same(stillActive.errors, ['status.Phase: Invalid value: "Active": may only be \'Terminating\' if `deletionTimestamp` is not empty']);
});

t.test('namespace finalize subresource changes only spec.finalizers', async (t) => {
  const live = stored(namespaces, ns('a'));
  const out = update(namespaces, { ...live, spec: { finalizers: [] }, status: { phase: 'Terminating' } }, live, 'finalize');
  t.same(out.errors, []);
  t.same(out.obj.spec, { finalizers: [] });
  t.same(out.obj.status, { phase: 'Active' }, 'status comes from the stored object');
  const bad = update(namespaces, { ...live, spec: { finalizers: ['svc', 'cleanup', 'a/b/c'] } }, live, 'finalize');
  t.same(bad.errors, [
    'spec.finalizers[1]: Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified',
    "spec.finalizers[2]: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
  ]);
});

t.test('namespace deletion: pending while spec.finalizers is non-empty, Terminating on request', async (t) => {
  const d = namespaces.deletion!;
  const live = stored(namespaces, ns('a'));
  t.equal(d.pending!(live), true);
  t.equal(d.pending!({ ...live, spec: { finalizers: [] } }), false);
  d.onDeleteRequested!(live);
  t.equal((live.status as { phase: string }).phase, 'Terminating');
  t.equal(d.returnsObject, true);
  t.same(d.protectedNames, ['default', 'svc-system', 'svc-public']);
});

t.test('namespace field selector status.phase and table columns', async (t) => {
  const live = stored(namespaces, ns('a'));
  t.same(Object.keys(namespaces.selectableFields ?? {}), ['status.phase']);
  t.equal(namespaces.selectableFields!['status.phase']!(live), 'Active');
  t.same(columnNames(namespaces), ['Name', 'Status', 'Age']);
  const row = cells(namespaces, live);
  t.equal(row[0], 'a');
  t.equal(row[1], 'Active');
  t.match(row[2], /^\d+(d|y)/);
});
