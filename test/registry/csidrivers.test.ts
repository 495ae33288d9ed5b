import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { csiDrivers } from '../../core/registry/storage/csidrivers.js';
import { cells, columnNames, create, fieldNames, stored, update } from './kind-harness.js';

const driver = (spec: Record<string, unknown> = {}, name = 'hostpath.csi.svc.io'): ApiObject => ({
  apiVersion: 'storage.svc.io/v1',
  kind: 'CSIDriver',
  metadata: { name },
  spec,
});


const DEFAULTED = {
  attachRequired: true,
  podInfoOnMount: false,
  volumeLifecycleModes: ['Persistent'],
  storageCapacity: false,
  fsGroupPolicy: 'ReadWriteOnceWithFSType',
  requiresRepublish: false,
  seLinuxMount: false,
};

t.test('csidriver declaration: storage.svc.io/v1, cluster-scoped, spec fields in Go order with markers', async (t) => {
  t.equal(csiDrivers.group, 'storage.svc.io');
  t.equal(csiDrivers.version, 'v1');
  t.equal(csiDrivers.namespaced, false);
  t.equal(csiDrivers.plural, 'csidrivers');
  t.equal(csiDrivers.singular, 'csidriver');
  t.equal(csiDrivers.shortNames, undefined);
  t.same(fieldNames(csiDrivers), ['kind', 'apiVersion', 'metadata', 'spec']);
  t.same(csiDrivers.schema.required, ['spec']);
  const spec = csiDrivers.schema.fields.spec;
  if (spec?.kind !== 'struct') throw new Error('spec is a struct');
  t.same(Object.keys(spec.fields), ['attachRequired', 'podInfoOnMount', 'volumeLifecycleModes', 'storageCapacity', 'fsGroupPolicy', 'tokenRequests', 'requiresRepublish', 'seLinuxMount']);
  t.match(spec.fields.volumeLifecycleModes, { kind: 'list', listType: 'set' });
  t.match(spec.fields.tokenRequests, { kind: 'list', listType: 'atomic', items: { kind: 'struct', required: ['audience'], fields: { audience: { always: true }, expirationSeconds: { ptr: true, format: 'int64' } } } });
  for (const f of ['attachRequired', 'podInfoOnMount', 'storageCapacity', 'fsGroupPolicy', 'requiresRepublish', 'seLinuxMount']) t.match(spec.fields[f], { ptr: true }, `${f} is a pointer`);
});

const CSI_NAME_MSG =
  "a CSI driver name must consist of alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'csi.example.com', regex used for validation is '[a-zA-Z0-9]([-.a-zA-Z0-9]*[a-zA-Z0-9])?')";

t.test('csidriver defaults', async (t) => {
  const out = create(csiDrivers, driver());
  t.same(out.errors, []);
  t.same(out.obj.spec, DEFAULTED);
  const given = create(csiDrivers, driver({ attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: ['Ephemeral'], fsGroupPolicy: 'File', seLinuxMount: true }));
  t.same(given.obj.spec, { ...DEFAULTED, attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: ['Ephemeral'], fsGroupPolicy: 'File', seLinuxMount: true });
  const emptyModes = create(csiDrivers, driver({ volumeLifecycleModes: [] }));
  t.same((emptyModes.obj.spec as { volumeLifecycleModes: string[] }).volumeLifecycleModes, ['Persistent'], 'an empty list means Persistent');
  const noSpec: ApiObject = { apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', metadata: { name: 'x' } };
  t.same(create(csiDrivers, noSpec).obj.spec, DEFAULTED);
});

t.test('csidriver name: alphanumerics of either case at both ends, dashes and dots between, at most 63 characters', async (t) => {
  const rows: [string, string, string[]][] = [
    ['dots and dashes between alphanumerics', 'csi.example-driver.io', []],
    ['upper-case letters are allowed, as the spec says', 'CSI.Example-Driver.io', []],
    ['63 characters', `a${'b'.repeat(61)}c`, []],
    ['64 characters are too long', 'a'.repeat(64), ['metadata.name: Too long: may not be more than 63 bytes']],
    ['must start with an alphanumeric', '-csi', [`metadata.name: Invalid value: "-csi": ${CSI_NAME_MSG}`]],
    ['must end with an alphanumeric', 'csi.', [`metadata.name: Invalid value: "csi.": ${CSI_NAME_MSG}`]],
    ['no other characters', 'csi_driver', [`metadata.name: Invalid value: "csi_driver": ${CSI_NAME_MSG}`]],
  ];
  for (const [name, value, want] of rows) t.same(create(csiDrivers, driver({}, value)).errors, want, name);
});

t.test('csidriver spec rules', async (t) => {
  const rows: [string, Record<string, unknown>, string[]][] = [
    ['fsGroupPolicy File', { fsGroupPolicy: 'File' }, []],
    ['fsGroupPolicy None', { fsGroupPolicy: 'None' }, []],
    [
      'fsGroupPolicy other values',
      { fsGroupPolicy: 'Always' },
      ['spec.fsGroupPolicy: Unsupported value: "Always": supported values: "File", "None", "ReadWriteOnceWithFSType"'],
    ],
    ['volumeLifecycleModes Persistent and Ephemeral', { volumeLifecycleModes: ['Persistent', 'Ephemeral'] }, []],
    [
      'volumeLifecycleModes other values',
      { volumeLifecycleModes: ['Persistent', 'Inline'] },
      ['spec.volumeLifecycleModes: Unsupported value: "Inline": supported values: "Persistent", "Ephemeral"'],
    ],
    ['distinct token audiences, one empty', { tokenRequests: [{ audience: '' }, { audience: 'vault' }] }, []],
    ['duplicate audiences', { tokenRequests: [{ audience: 'vault' }, { audience: 'vault' }] }, ['spec.tokenRequests[1].audience: Duplicate value: "vault"']],
    ['at most one empty audience', { tokenRequests: [{ audience: '' }, { audience: '' }] }, ['spec.tokenRequests[1].audience: Duplicate value: ""']],
    ['expiration of 10 minutes', { tokenRequests: [{ audience: 'a', expirationSeconds: 600 }] }, []],
    [
      'expiration below 10 minutes',
      { tokenRequests: [{ audience: 'a', expirationSeconds: 599 }] },
      ['spec.tokenRequests[0].expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes'],
    ],
    ['expiration of 2^32 seconds', { tokenRequests: [{ audience: 'a', expirationSeconds: 2 ** 32 }] }, []],
    [
      'expiration above 2^32 seconds',
      { tokenRequests: [{ audience: 'a', expirationSeconds: 2 ** 32 + 1 }] },
      ['spec.tokenRequests[0].expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds'],
    ],
  ];
  for (const [name, spec, want] of rows) t.same(create(csiDrivers, driver(spec)).errors, want, name);
  t.same(csiDrivers.validateCreate!(driver({})), [
    { type: 'FieldValueRequired', field: 'spec.attachedRequired', badValue: '', detail: '' },
    { type: 'FieldValueRequired', field: 'spec.podInfoOnMount', badValue: '', detail: '' },
    { type: 'FieldValueRequired', field: 'spec.storageCapacity', badValue: '', detail: '' },
    { type: 'FieldValueRequired', field: 'spec.seLinuxMount', badValue: '', detail: '' },
  ], 'undefaulted booleans are required (upstream path spec.attachedRequired)');
});

t.test('csidriver updates: attachRequired and volumeLifecycleModes are immutable, the rest mutable', async (t) => {
  const live = stored(csiDrivers, driver());
  const spec = live.spec as Record<string, unknown>;
  t.same(update(csiDrivers, { ...live, spec: { ...spec, attachRequired: false } }, live).errors, ['spec.attachedRequired: Invalid value: false: field is immutable']);
  t.same(update(csiDrivers, { ...live, spec: { ...spec, volumeLifecycleModes: ['Persistent', 'Ephemeral'] } }, live).errors, [
    'spec.volumeLifecycleModes: Invalid value: ["Persistent","Ephemeral"]: field is immutable',
  ]);
  const mutable = {
    podInfoOnMount: true,
    fsGroupPolicy: 'None',
    storageCapacity: true,
    requiresRepublish: true,
    seLinuxMount: true,
    tokenRequests: [{ audience: 'vault', expirationSeconds: 3600 }],
  };
  for (const [field, value] of Object.entries(mutable)) {
    t.same(update(csiDrivers, { ...live, spec: { ...spec, [field]: value } }, live).errors, [], `${field} is mutable`);
  }
  t.same(update(csiDrivers, { ...live, spec: { ...spec, fsGroupPolicy: 'Bad' } }, live).errors, [
    'spec.fsGroupPolicy: Unsupported value: "Bad": supported values: "File", "None", "ReadWriteOnceWithFSType"',
  ]);
});

t.test('csidriver generation: unset on create, bumped on each spec change only', async (t) => {
  const live = stored(csiDrivers, driver());
  t.equal(live.metadata.generation, undefined, 'upstream leaves generation unset on create');
  const spec = live.spec as Record<string, unknown>;
  const first = update(csiDrivers, { ...live, spec: { ...spec, podInfoOnMount: true } }, live);
  t.equal(first.obj.metadata.generation, 1);
  const second = update(csiDrivers, { ...first.obj, spec: { ...spec, podInfoOnMount: true, requiresRepublish: true } }, first.obj);
  t.equal(second.obj.metadata.generation, 2);
  const metaOnly = update(csiDrivers, { ...second.obj, metadata: { ...second.obj.metadata, labels: { a: 'b' } } }, second.obj);
  t.equal(metaOnly.obj.metadata.generation, 2, 'metadata changes do not bump generation');
  const clientBump = update(csiDrivers, { ...second.obj, metadata: { ...second.obj.metadata, generation: 40 } }, second.obj);
  t.equal(clientBump.obj.metadata.generation, 2, 'clients cannot set generation');
  t.equal(csiDrivers.generationOf, undefined);
});

t.test('csidriver table columns as upstream prints them', async (t) => {
  t.same(columnNames(csiDrivers), ['Name', 'AttachRequired', 'PodInfoOnMount', 'StorageCapacity', 'TokenRequests', 'RequiresRepublish', 'Modes', 'Age']);
  t.same(csiDrivers.tableColumns!.map((c) => c.type), ['string', 'boolean', 'boolean', 'boolean', 'string', 'boolean', 'string', 'string']);
  t.same(cells(csiDrivers, stored(csiDrivers, driver())).slice(0, 7), ['hostpath.csi.svc.io', true, false, false, '<unset>', false, 'Persistent']);
  const full = stored(csiDrivers, driver({ tokenRequests: [{ audience: 'a' }, { audience: 'b' }], volumeLifecycleModes: ['Persistent', 'Ephemeral'] }));
  t.same(cells(csiDrivers, full).slice(4, 7), ['a,b', false, 'Persistent,Ephemeral']);
  t.same(cells(csiDrivers, driver()).slice(1, 7), [true, false, false, '<unset>', false, '<none>'], 'undefaulted cells use upstream fallbacks');
});
