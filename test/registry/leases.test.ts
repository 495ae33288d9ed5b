import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { leases, makeLeases } from '../../core/registry/coordination/leases.js';
import { cells, columnNames, create, fieldNames, stored, update } from './kind-harness.js';

const lease = (spec: Record<string, unknown> = {}): ApiObject => ({
  apiVersion: 'coordination.svc.io/v1',
  kind: 'Lease',
  metadata: { name: 'node-1', namespace: 'svc-node-lease' },
  spec,
});

const withGate = makeLeases({ coordinatedLeaderElection: true });

t.test('lease declaration: coordination.svc.io/v1, namespaced, LeaseSpec fields in Go order', async (t) => {
  t.equal(leases.group, 'coordination.svc.io');
  t.equal(leases.namespaced, true);
  t.equal(leases.allowCreateOnUpdate, true);
  t.same(fieldNames(leases), ['kind', 'apiVersion', 'metadata', 'spec']);
  const spec = leases.schema.fields.spec;
  if (spec?.kind !== 'struct') throw new Error('spec is a struct');
  t.same(Object.keys(spec.fields), ['holderIdentity', 'leaseDurationSeconds', 'acquireTime', 'renewTime', 'leaseTransitions', 'strategy', 'preferredHolder']);
  t.match(spec.fields.renewTime, { ptr: true, format: 'date-time-micro' });
  t.match(spec.fields.leaseDurationSeconds, { ptr: true, format: 'int32' });
});

t.test('lease validation', async (t) => {
  const rows: [string, Record<string, unknown>, string[]][] = [
    ['a heartbeat lease is valid', { holderIdentity: 'node-1', leaseDurationSeconds: 40, renewTime: '2024-01-01T00:00:00.000000Z' }, []],
    ['leaseDurationSeconds must be positive', { leaseDurationSeconds: 0 }, ['spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0']],
    ['leaseTransitions may be 0', { leaseTransitions: 0 }, []],
    ['leaseTransitions may not be negative', { leaseTransitions: -1 }, ['spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0']],
  ];
  for (const [name, spec, want] of rows) t.same(create(leases, lease(spec)).errors, want, name);
  const gated: [string, Record<string, unknown>, string[]][] = [
    ['the known strategy', { holderIdentity: 'a', strategy: 'OldestEmulationVersion', preferredHolder: 'b' }, []],
    ['an unknown unprefixed strategy', { strategy: 'Newest' }, ['spec.strategy.strategy: Unsupported value: "Newest": supported values: "OldestEmulationVersion"']],
    ['a prefixed strategy', { strategy: 'example.com/mine' }, []],
    [
      'a prefixed strategy must be a qualified name',
      { strategy: 'example.com/-x' },
      [
        "spec.strategy.strategy: Invalid value: \"example.com/-x\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
      ],
    ],
    ['preferredHolder needs a strategy', { holderIdentity: 'a', preferredHolder: 'b' }, ['spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined']],
  ];
  for (const [name, spec, want] of gated) t.same(create(withGate, lease(spec)).errors, want, name);
  const live = stored(leases, lease({ holderIdentity: 'a' }));
  t.same(update(leases, { ...live, spec: { leaseDurationSeconds: -5 } }, live).errors, ['spec.leaseDurationSeconds: Invalid value: -5: must be greater than 0'], 'update validates the spec');
});

t.test('lease alpha fields are dropped while CoordinatedLeaderElection is off', async (t) => {
  const out = create(leases, lease({ holderIdentity: 'a', strategy: 'Bad', preferredHolder: 'b' }));
  t.same(out.errors, [], 'dropped before validation');
  t.same(out.obj.spec, { holderIdentity: 'a' });
  const live = stored(leases, lease({ holderIdentity: 'a' }));
  t.same(update(leases, { ...live, spec: { holderIdentity: 'a', strategy: 'OldestEmulationVersion' } }, live).obj.spec, { holderIdentity: 'a' });
  const storedWithGate = stored(withGate, lease({ holderIdentity: 'a', strategy: 'OldestEmulationVersion', preferredHolder: 'b' }));
  const kept = update(leases, { ...storedWithGate, spec: { holderIdentity: 'c', strategy: 'OldestEmulationVersion', preferredHolder: 'd' } }, storedWithGate);
  t.same(kept.obj.spec, { holderIdentity: 'c', strategy: 'OldestEmulationVersion', preferredHolder: 'd' }, 'kept when already stored');
  t.same(create(withGate, lease({ holderIdentity: 'a', strategy: 'OldestEmulationVersion' })).obj.spec, { holderIdentity: 'a', strategy: 'OldestEmulationVersion' });
});

t.test('lease table: Name, Holder, Age', async (t) => {
  t.same(columnNames(leases), ['Name', 'Holder', 'Age']);
  t.same(cells(leases, stored(leases, lease({ holderIdentity: 'node-1_abc' }))).slice(0, 2), ['node-1', 'node-1_abc']);
  t.same(cells(leases, stored(leases, lease())).slice(0, 2), ['node-1', '']);
});
