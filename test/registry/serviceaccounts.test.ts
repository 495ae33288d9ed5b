import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { serviceAccounts } from '../../core/registry/core/serviceaccounts.js';
import { cells, columnNames, create, fieldNames, stored, update } from './kind-harness.js';

const sa = (extra: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): ApiObject => ({
  apiVersion: 'v1',
  kind: 'ServiceAccount',
  metadata: { name: 'builder', namespace: 'default', ...metadata },
  ...extra,
});

t.test('serviceaccount declaration: short name sa, list markers', async (t) => {
  t.same(serviceAccounts.shortNames, ['sa']);
  t.same(fieldNames(serviceAccounts), ['kind', 'apiVersion', 'metadata', 'secrets', 'imagePullSecrets', 'automountServiceAccountToken']);
  t.match(serviceAccounts.schema.fields.secrets, { kind: 'list', listType: 'map', listMapKeys: ['name'], patchStrategy: 'merge', patchMergeKey: 'name' });
  t.match(serviceAccounts.schema.fields.imagePullSecrets, { kind: 'list', listType: 'atomic' });
  t.match(serviceAccounts.schema.fields.automountServiceAccountToken, { kind: 'scalar', type: 'boolean', ptr: true });
});

t.test('serviceaccount secret references keep only the name, on create and update', async (t) => {
  const out = create(serviceAccounts, sa({ secrets: [{ name: 'tok', namespace: 'other', uid: 'u', kind: 'Secret' }, { kind: 'Secret' }], automountServiceAccountToken: false }));
  t.same(out.errors, []);
  t.same(out.obj.secrets, [{ name: 'tok' }, {}]);
  t.equal(out.obj.automountServiceAccountToken, false);
  const live = stored(serviceAccounts, sa());
  const up = update(serviceAccounts, { ...live, secrets: [{ name: 'x', apiVersion: 'v1' }], imagePullSecrets: [{ name: 'reg' }] }, live);
  t.same(up.errors, []);
  t.same(up.obj.secrets, [{ name: 'x' }]);
  t.same(up.obj.imagePullSecrets, [{ name: 'reg' }]);
});

t.test('serviceaccount validation: standard finalizer names on create and update', async (t) => {
  t.same(create(serviceAccounts, sa({}, { finalizers: ['mine'] })).errors, [
    'metadata.finalizers[0]: Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified',
  ]);
  const live = stored(serviceAccounts, sa());
  t.same(update(serviceAccounts, { ...live, metadata: { ...live.metadata, finalizers: ['mine'] } }, live).errors, [
    'metadata.finalizers[0]: Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified',
  ]);
});

t.test('the enforce-mountable-secrets annotation draws the 1.32 deprecation warning', async (t) => {
  t.same(create(serviceAccounts, sa()).warnings, []);
  const want = ['metadata.annotations[svc.io/enforce-mountable-secrets]: deprecated in v1.32+; prefer separate namespaces to isolate access to mounted secrets'];
  t.same(create(serviceAccounts, sa({}, { annotations: { 'svc.io/enforce-mountable-secrets': 'true' } })).warnings, want);
  const live = stored(serviceAccounts, sa());
  t.same(update(serviceAccounts, { ...live, metadata: { ...live.metadata, annotations: { 'svc.io/enforce-mountable-secrets': 'false' } } }, live).warnings, want);
});

t.test('serviceaccount table: Name, Secrets, Age', async (t) => {
  t.same(columnNames(serviceAccounts), ['Name', 'Secrets', 'Age']);
  t.same(cells(serviceAccounts, stored(serviceAccounts, sa({ secrets: [{ name: 'a' }, { name: 'b' }] }))).slice(0, 2), ['builder', 2]);
});
