import t from 'tap';
import { type FieldError, fieldErrorString } from '../../core/api/field-errors.js';
import {
  finalizerNameWarnings,
  generateName,
  generateNameSuffix,
  humanDuration,
  inheritSystemMetadata,
  timestampAge,
  validateBuiltinFinalizerNames,
  validateFieldManager,
  validateFinalizerName,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from '../../core/api/objectmeta.js';
import type { ObjectMeta } from '../../core/api/types.js';

const strs = (errs: FieldError[]): string[] => errs.map(fieldErrorString);
const NAME_PART_MSG =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const ns = { namespaced: true } as const;
const cluster = { namespaced: false } as const;

t.test('validateObjectMeta create rules', async (t) => {
  const rows: [string, ObjectMeta | undefined, { namespaced: boolean; nameRule?: 'dns1123-label' | 'path-segment' }, string[]][] = [
    ['a valid namespaced object passes', { name: 'a', namespace: 'default' }, ns, []],
    ['name or generateName is required', { namespace: 'default' }, ns, ['metadata.name: Required value: name or generateName is required']],
    ['undefined meta needs a name and a namespace', undefined, ns, ['metadata.name: Required value: name or generateName is required', 'metadata.namespace: Required value']],
    ['a generateName without a name is accepted (name generated later)', { generateName: 'web-', namespace: 'x' }, ns, []],
    ['generateName is validated as a prefix', { generateName: 'Web-', name: 'web-abcde', namespace: 'x' }, ns, [`metadata.generateName: Invalid value: "Web-": ${SUBDOMAIN_MSG}`]],
    ['the default name rule is a DNS subdomain', { name: 'Bad', namespace: 'x' }, ns, [`metadata.name: Invalid value: "Bad": ${SUBDOMAIN_MSG}`]],
    ['the dns1123-label rule rejects dots', { name: 'a.b' }, { namespaced: false, nameRule: 'dns1123-label' }, ['metadata.name: Invalid value: "a.b": must not contain dots']],
    ['the path-segment rule allows capitals but not slashes', { name: 'A/b', namespace: 'x' }, { namespaced: true, nameRule: 'path-segment' }, [`metadata.name: Invalid value: "A/b": may not contain '/'`]],
    ['a namespace is required for namespaced kinds', { name: 'a' }, ns, ['metadata.namespace: Required value']],
    ['the namespace must be a DNS label', { name: 'a', namespace: 'a.b' }, ns, ['metadata.namespace: Invalid value: "a.b": must not contain dots']],
    ['the namespace is forbidden on cluster-scoped kinds', { name: 'a', namespace: 'x' }, cluster, ['metadata.namespace: Forbidden: not allowed on this type']],
    ['generation may not be negative', { name: 'a', generation: -1 }, cluster, ['metadata.generation: Invalid value: -1: must be greater than or equal to 0']],
    ['labels are validated', { name: 'a', labels: { 'a b': 'c' } }, cluster, [`metadata.labels: Invalid value: "a b": ${NAME_PART_MSG}`]],
    ['annotations are validated', { name: 'a', annotations: { '-x': '' } }, cluster, [`metadata.annotations: Invalid value: "-x": ${NAME_PART_MSG}`]],
    ['finalizers must be qualified names (reported without index)', { name: 'a', finalizers: ['-bad'] }, cluster, [`metadata.finalizers: Invalid value: "-bad": ${NAME_PART_MSG}`]],
    [
      'orphan and foregroundDeletion exclude each other',
      { name: 'a', finalizers: ['orphan', 'foregroundDeletion'] },
      cluster,
      ['metadata.finalizers: Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and foregroundDeletion cannot be both set'],
    ],
  ];
  for (const [name, meta, rules, expected] of rows) t.same(strs(validateObjectMeta(meta, rules)), expected, name);
});

t.test('owner references need version, kind, name and uid, and one controller', async (t) => {
  const errs = strs(validateObjectMeta({ name: 'a', ownerReferences: [{ apiVersion: '', kind: '', name: '', uid: '' }] }, cluster));
  t.same(errs, [
    'metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty',
    'metadata.ownerReferences.kind: Invalid value: "": kind must not be empty',
    'metadata.ownerReferences.name: Invalid value: "": name must not be empty',
    'metadata.ownerReferences.uid: Invalid value: "": uid must not be empty',
  ]);
  t.same(strs(validateObjectMeta({ name: 'a', ownerReferences: [{ apiVersion: 'a/b/c', kind: 'K', name: 'n', uid: 'u' }] }, cluster)), [
    'metadata.ownerReferences.apiVersion: Invalid value: "a/b/c": version must not be empty',
  ]);
  const event = validateObjectMeta({ name: 'a', ownerReferences: [{ apiVersion: 'v1', kind: 'Event', name: 'e', uid: 'u' }] }, cluster);
  t.equal(event.length, 1);
  t.equal(event[0]!.detail, '/v1, Kind=Event is disallowed from being an owner');
  const two = validateObjectMeta(
    {
      name: 'a',
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'r1', uid: '1', controller: true },
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'r2', uid: '2', controller: true },
      ],
    },
    cluster,
  );
  t.equal(two.length, 1);
  t.equal(two[0]!.field, 'metadata.ownerReferences');
  t.equal(two[0]!.detail, 'Only one reference can have Controller set to true. Found "true" in references for ReplicaSet/r1 and ReplicaSet/r2');
});

t.test('managedFields entries: operation, fieldsType, manager and subresource', async (t) => {
  const errs = strs(
    validateObjectMeta(
      {
        name: 'a',
        managedFields: [
          { manager: 'm', operation: 'Apply', fieldsType: 'FieldsV1' },
          { manager: 'bad\u0007', operation: 'Patch', fieldsType: 'FieldsV2', subresource: 's'.repeat(257) },
          { manager: 'x'.repeat(129), operation: 'Update' },
        ],
      },
      cluster,
    ),
  );
  t.same(errs, [
    'metadata.managedFields[1].operation: Invalid value: "Patch": must be `Apply` or `Update`',
    'metadata.managedFields[1].fieldsType: Invalid value: "FieldsV2": must be `FieldsV1`',
    `metadata.managedFields[1].manager: Invalid value: ${JSON.stringify('bad\u0007')}: invalid character U+0007 (at position 3)`,
    'metadata.managedFields[1].subresource: Too long: may not be more than 256 bytes',
    'metadata.managedFields[2].manager: Too long: may not be more than 128 bytes',
  ]);
  t.same(validateFieldManager('kubectl-client-side-apply', 'fieldManager'), []);
  t.same(strs(validateFieldManager('é\u0000', 'fieldManager')), ['fieldManager: Invalid value: "é\\u0000": invalid character U+0000 (at position 2)']);
});

const live: ObjectMeta = {
  name: 'a',
  namespace: 'n',
  uid: 'u1',
  resourceVersion: '5',
  generation: 2,
  creationTimestamp: '2024-01-01T00:00:00Z',
};

t.test('validateObjectMetaUpdate rules', async (t) => {
  const rows: [string, ObjectMeta, ObjectMeta, string[]][] = [
    ['an unchanged object passes', { ...live }, live, []],
    ['resourceVersion is left to the registry', { ...live, resourceVersion: '' }, live, []],
    ['generation must not decrease', { ...live, generation: 1 }, live, ['metadata.generation: Invalid value: 1: must not be decremented']],
    ['name is immutable', { ...live, name: 'b' }, live, ['metadata.name: Invalid value: "b": field is immutable']],
    ['namespace is immutable', { ...live, namespace: 'm' }, live, ['metadata.namespace: Invalid value: "m": field is immutable']],
    ['uid is immutable', { ...live, uid: 'u2' }, live, ['metadata.uid: Invalid value: "u2": field is immutable']],
    [
      'creationTimestamp is immutable',
      { ...live, creationTimestamp: '2024-01-02T00:00:00Z' },
      live,
      ['metadata.creationTimestamp: Invalid value: "2024-01-02T00:00:00Z": field is immutable'],
    ],
    ['the same instant in another form is not a change', { ...live, creationTimestamp: '2024-01-01T00:00:00.000Z' }, live, []],
    [
      'deletionTimestamp cannot be set by an update',
      { ...live, deletionTimestamp: '2024-01-02T00:00:00Z' },
      live,
      ['metadata.deletionTimestamp: Invalid value: "2024-01-02T00:00:00Z": field is immutable'],
    ],
    ['deletionTimestamp cannot be cleared', { ...live }, { ...live, deletionTimestamp: '2024-01-02T00:00:00Z' }, ['metadata.deletionTimestamp: Invalid value: null: field is immutable']],
    [
      'deletionGracePeriodSeconds is immutable',
      { ...live, deletionGracePeriodSeconds: 5 },
      { ...live, deletionGracePeriodSeconds: 30 },
      ['metadata.deletionGracePeriodSeconds: Invalid value: 5: field is immutable'],
    ],
    [
      'no new finalizers while deleting',
      { ...live, deletionTimestamp: 'T', finalizers: ['b.io/x', 'a.io/y', 'keep.io/z'] },
      { ...live, deletionTimestamp: 'T', finalizers: ['keep.io/z'] },
      ['metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"a.io/y", "b.io/x"}'],
    ],
    ['finalizers may be removed while deleting', { ...live, deletionTimestamp: 'T' }, { ...live, deletionTimestamp: 'T', finalizers: ['a.io/x'] }, []],
    ['labels are validated on update too', { ...live, labels: { a: '-' } }, live, [
      "metadata.labels: Invalid value: \"-\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ]],
    ['finalizer names are validated on update too', { ...live, finalizers: ['a/b/c/d'] }, live, [
      "metadata.finalizers: Invalid value: \"a/b/c/d\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ]],
  ];
  for (const [name, next, old, expected] of rows) t.same(strs(validateObjectMetaUpdate(next, old)), expected, name);
});

t.test('inheritSystemMetadata carries the system fields over as upstream BeforeUpdate does', async (t) => {
  const next: ObjectMeta = { name: 'a', generation: 9, deletionGracePeriodSeconds: undefined };
  inheritSystemMetadata(next, { ...live, deletionTimestamp: 'T', deletionGracePeriodSeconds: 0 });
  t.same(next, { name: 'a', generation: 2, uid: 'u1', creationTimestamp: live.creationTimestamp, deletionTimestamp: 'T', deletionGracePeriodSeconds: 0 });
  const noGen: ObjectMeta = { name: 'a', generation: 3 };
  inheritSystemMetadata(noGen, { name: 'a' });
  t.equal(noGen.generation, undefined);
});

t.test('built-in kinds require standard or prefixed finalizer names, per index', async (t) => {
  t.same(validateBuiltinFinalizerNames({ finalizers: ['svc', 'orphan', 'foregroundDeletion', 'example.com/x'] }), []);
  t.same(strs(validateBuiltinFinalizerNames({ finalizers: ['ok.io/a', 'kubernetes'] })), [
    'metadata.finalizers[1]: Invalid value: "kubernetes": name is neither a standard finalizer name nor is it fully qualified',
  ]);
  t.same(strs(validateFinalizerName('Bad_', 'spec.finalizers')), [
    `spec.finalizers: Invalid value: "Bad_": ${NAME_PART_MSG}`,
    'spec.finalizers: Invalid value: "Bad_": name is neither a standard finalizer name nor is it fully qualified',
  ]);
});

t.test('finalizer warnings for custom resources cover only added names', async (t) => {
  t.same(finalizerNameWarnings({ finalizers: ['a.io/x', 'orphan'] }), []);
  t.same(finalizerNameWarnings({ finalizers: ['mine', 'cert.example.com'] }, { finalizers: [] }), [
    'metadata.finalizers: "cert.example.com": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers',
    'metadata.finalizers: "mine": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers',
  ]);
  t.same(finalizerNameWarnings({ finalizers: ['mine'] }, { finalizers: ['mine'] }), []);
});

t.test('generated names: 5 characters from the consonant-digit alphabet, base cut to 58', async (t) => {
  for (let i = 0; i < 50; i++) t.match(generateNameSuffix(), /^[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  t.match(generateName('web-'), /^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  t.equal(generateName('x'.repeat(70)).length, 63);
});

t.test('humanDuration matches upstream thresholds', async (t) => {
  const s = 1000;
  const rows: [number, string][] = [
    [-2 * s, '<invalid>'],
    [-1 * s, '0s'],
    [0, '0s'],
    [119 * s, '119s'],
    [120 * s, '2m'],
    [200 * s, '3m20s'],
    [600 * s, '10m'],
    [179 * 60 * s, '179m'],
    [3 * 3600 * s, '3h'],
    [(3 * 3600 + 120) * s, '3h2m'],
    [47 * 3600 * s, '47h'],
    [50 * 3600 * s, '2d2h'],
    [72 * 3600 * s, '3d'],
    [400 * 86400 * s, '400d'],
    [(2 * 365 + 3) * 86400 * s, '2y3d'],
    [9 * 365 * 86400 * s, '9y'],
  ];
  for (const [ms, want] of rows) t.equal(humanDuration(ms), want, want);
  t.equal(timestampAge(undefined), '<unknown>');
  t.equal(timestampAge('0001-01-01T00:00:00Z'), '<unknown>');
  t.equal(timestampAge('2024-01-01T00:00:00Z', Date.parse('2024-01-01T00:00:30Z')), '30s');
});
