import t from 'tap';
import { applyRuntimeConfig, EnablementError, resolveFeatureGates, servedTypesFor } from '../../core/registry/enablement.js';
import { builtinResourceTypes } from '../../core/registry/catalog.js';

const plurals = (cfg: Record<string, boolean>) => applyRuntimeConfig(builtinResourceTypes, cfg).map((r) => `${r.group}/${r.plural}`);

t.test('feature gates: defaults, overrides, unknown and locked gates', async (t) => {
  const d = resolveFeatureGates({});
  t.equal(d.WatchList, true, 'WatchList is beta and on by default');
  t.equal(d.CoordinatedLeaderElection, false, 'alpha gates are off by default');
  t.equal(resolveFeatureGates({ CoordinatedLeaderElection: true }).CoordinatedLeaderElection, true);
  t.throws(() => resolveFeatureGates({ NoSuchGate: true }), new EnablementError('unrecognized feature gate: NoSuchGate'));
  t.throws(() => resolveFeatureGates({ ServerSideApply: false }), new EnablementError('cannot set feature gate ServerSideApply to false, feature is locked to true'));
});

t.test('runtime config: a group version, one resource, api/all with the core re-enabled', async (t) => {
  const all = plurals({});
  t.equal(all.length, builtinResourceTypes.length, 'everything is served by default');
  t.notOk(plurals({ 'storage.svc.io/v1': false }).includes('storage.svc.io/csidrivers'), 'a group version turned off');
  const one = plurals({ 'v1/secrets': false });
  t.notOk(one.includes('/secrets'), 'one core resource turned off');
  t.ok(one.includes('/configmaps'), 'the rest of the group stays');
  t.same(plurals({ 'api/all': false, 'api/v1': true }).sort(), all.filter((p) => p.startsWith('/')).sort(), 'api/all=false keeps only what is turned back on');
  t.ok(plurals({ 'coordination.svc.io/v1': false, 'coordination.svc.io/v1/leases': true }).includes('coordination.svc.io/leases'), 'the most specific key wins');
});

t.test('runtime config: unknown groups and resources, and the core API, are errors', async (t) => {
  t.throws(() => plurals({ 'nope.svc.io/v1': false }), new EnablementError('unknown api groups nope.svc.io'));
  t.throws(() => plurals({ 'storage.svc.io/v1/nothings': false }), new EnablementError('unknown resource storage.svc.io/v1/nothings'));
  t.throws(() => plurals({ v1: false }), new EnablementError('the core v1 API (namespaces) cannot be disabled'));
});

t.test('the CoordinatedLeaderElection gate decides whether Lease keeps its alpha fields', async (t) => {
  const on = servedTypesFor({ CoordinatedLeaderElection: true }).find((r) => r.plural === 'leases')!;
  const off = servedTypesFor({ CoordinatedLeaderElection: false }).find((r) => r.plural === 'leases')!;
  const lease = () => ({ metadata: { name: 'l' }, spec: { strategy: 'OldestEmulationVersion', preferredHolder: 'x' } }) as never;
  const a = lease();
  on.prepareForCreate!(a);
  t.same((a as { spec: object }).spec, { strategy: 'OldestEmulationVersion', preferredHolder: 'x' });
  const b = lease();
  off.prepareForCreate!(b);
  t.same((b as { spec: object }).spec, {});
});
