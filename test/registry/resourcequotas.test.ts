import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { resourceQuotas } from '../../core/registry/core/resourcequotas.js';
import { decodeStructural } from '../../core/schema/structural.js';
import { fieldErrorString } from '../../core/api/field-errors.js';
import { cells, columnNames, create, fieldNames, stored, update } from './kind-harness.js';

const rq = (spec: Record<string, unknown>, extra: Record<string, unknown> = {}): ApiObject => ({
  apiVersion: 'v1',
  kind: 'ResourceQuota',
  metadata: { name: 'q', namespace: 'default' },
  spec,
  ...extra,
});

t.test('declaration: short name quota, status subresource, fields in Go order', async (t) => {
  t.same(resourceQuotas.shortNames, ['quota']);
  t.equal(resourceQuotas.namespaced, true);
  t.same(fieldNames(resourceQuotas), ['kind', 'apiVersion', 'metadata', 'spec', 'status']);
  t.same(Object.keys(resourceQuotas.subresources ?? {}), ['status']);
  t.same(columnNames(resourceQuotas), ['Name', 'Age', 'Request', 'Limit']);
});

t.test('quantities are decoded into canonical text; a bad one is refused with upstream\'s wording', async (t) => {
  const r = decodeStructural<ApiObject>(rq({ hard: { cpu: '1000m', memory: '1024Ki', pods: 10, secrets: ' 2 ' } }), resourceQuotas.schema);
  t.same(r.errors, []);
  t.same((r.value as unknown as { spec: { hard: unknown } }).spec.hard, { cpu: '1', memory: '1Mi', pods: '10', secrets: '2' });
  const bad = decodeStructural<ApiObject>(rq({ hard: { pods: 'ten', cpu: true } }), resourceQuotas.schema);
  t.same(bad.errors.map(fieldErrorString), [
    'spec.hard.cpu: Invalid value: "boolean": spec.hard.cpu in body must be of type string: "boolean"',
    `spec.hard.pods: Invalid value: "ten": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
  ]);
});

t.test('validation as upstream\'s ValidateResourceQuota', async (t) => {
  const rows: [string, ApiObject, string[]][] = [
    ['standard and counted names', rq({ hard: { cpu: '1', 'requests.memory': '1Gi', pods: '3', 'count/configmaps': '2', 'count/widgets.example.com': '1', 'hugepages-2Mi': '1Gi' } }), []],
    ['negative quantities', rq({ hard: { cpu: '-1' } }), ['spec.hard[cpu]: Invalid value: "-1": must be greater than or equal to 0']],
    ['integer resources', rq({ hard: { pods: '1500m', 'count/secrets': '0.5' } }), [
      'spec.hard[pods]: Invalid value: "1500m": must be an integer',
      'spec.hard[count/secrets]: Invalid value: "500m": must be an integer',
    ]],
    ['unknown unprefixed names', rq({ hard: { foo: '1' } }), [
      'spec.hard[foo]: Invalid value: "foo": must be a standard resource type or fully qualified',
      'spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota',
    ]],
    ['standard names that quota does not track', rq({ hard: { storage: '1Gi' } }), ['spec.hard[storage]: Invalid value: "storage": must be a standard resource for quota']],
    ['names must be qualified names', rq({ hard: { 'count/a/b': '1' } }), [
      "spec.hard[count/a/b]: Invalid value: \"count/a/b\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ]],
    ['scopes for pod resources', rq({ hard: { pods: '1', cpu: '1' }, scopes: ['NotTerminating', 'BestEffort'] }), [
      'spec.scopes: Invalid value: ["NotTerminating","BestEffort"]: unsupported scope applied to resource',
    ]],
    ['unsupported scope', rq({ hard: { pods: '1' }, scopes: ['Sometimes'] }), ['spec.scopes: Invalid value: ["Sometimes"]: unsupported scope']],
    ['conflicting scopes', rq({ hard: { pods: '1' }, scopes: ['Terminating', 'NotTerminating'] }), ['spec.scopes: Invalid value: ["Terminating","NotTerminating"]: conflicting scopes']],
    ['scope selector operators', rq({ hard: { pods: '1' }, scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In' }, { scopeName: 'BestEffort', operator: 'In', values: ['x'] }, { scopeName: 'PriorityClass', operator: 'Maybe' }] } }), [
      "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
      "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
      'spec.scopeSelector.matchExpressions.operator: Invalid value: "Maybe": not a valid selector operator',
    ]],
  ];
  for (const [name, obj, want] of rows) t.same(create(resourceQuotas, obj).errors, want, name);
});

t.test('status is server-owned: cleared on create, kept by updates; status writes keep spec; scopes are immutable', async (t) => {
  const made = create(resourceQuotas, rq({ hard: { pods: '1' } }, { status: { hard: { pods: '1' }, used: { pods: '1' } } }));
  t.same(made.obj.status, {});
  const live = stored(resourceQuotas, rq({ hard: { pods: '2' }, scopes: ['NotTerminating'] }));
  (live as { status?: unknown }).status = { hard: { pods: '2' }, used: { pods: '1' } };
  const u = update(resourceQuotas, rq({ hard: { pods: '3' }, scopes: ['NotTerminating'] }, { metadata: live.metadata, status: {} }), live);
  t.same(u.errors, []);
  t.same(u.obj.status, { hard: { pods: '2' }, used: { pods: '1' } });
  const scoped = update(resourceQuotas, rq({ hard: { pods: '3' }, scopes: ['Terminating'] }, { metadata: live.metadata }), live);
  t.same(scoped.errors, ['spec.scopes: Invalid value: ["Terminating"]: field is immutable']);
  const s = update(resourceQuotas, rq({ hard: { cpu: '1' } }, { metadata: live.metadata, status: { hard: { pods: '2' }, used: { pods: '-1' } } }), live, 'status');
  t.same((s.obj as unknown as { spec: unknown }).spec, { hard: { pods: '2' }, scopes: ['NotTerminating'] });
  t.same(s.errors, ['status.used[pods]: Invalid value: "-1": must be greater than or equal to 0']);
});

t.test('table cells: used/hard per enforced resource, limits.* in the Limit column', async (t) => {
  const obj = rq(
    { hard: {} },
    { metadata: { name: 'q', namespace: 'd', creationTimestamp: new Date().toISOString() }, status: { hard: { 'limits.cpu': '2', pods: '10', 'count/configmaps': '5', 'requests.cpu': '1' }, used: { pods: '3', 'limits.cpu': '500m' } } },
  );
  const c = cells(resourceQuotas, obj);
  t.equal(c[0], 'q');
  t.equal(c[2], 'count/configmaps: 0/5, pods: 3/10, requests.cpu: 0/1');
  t.equal(c[3], 'limits.cpu: 500m/2');
});
