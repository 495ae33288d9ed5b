import t from 'tap';
import type { UserInfo } from '../../core/api/types.js';
import { mandatoryFlowSchemas, mandatoryPriorityLevels, suggestedFlowSchemas, suggestedPriorityLevels } from '../../core/flowcontrol/bootstrap.js';
import { FlowController } from '../../core/flowcontrol/controller.js';
import type { FlowSchema } from '../../core/registry/flowcontrol/flowschemas.js';
import type { PriorityLevelConfiguration } from '../../core/registry/flowcontrol/prioritylevelconfigurations.js';
import type { RequestInfo } from '../../core/request/request-info.js';

const asStored = <T>(o: { metadata: { name: string }; spec: unknown }, i: number): T => ({ metadata: { ...o.metadata, uid: `uid-${o.metadata.name}-${i}` }, spec: structuredClone(o.spec) }) as T;

function controller(extraFs: FlowSchema[] = [], extraPl: PriorityLevelConfiguration[] = [], counts: { objects?: number; watchers?: number } = {}, serverCL = 600): FlowController {
  const fss = [...mandatoryFlowSchemas, ...suggestedFlowSchemas].map((f, i) => asStored<FlowSchema>(f, i));
  const pls = [...mandatoryPriorityLevels, ...suggestedPriorityLevels].map((p, i) => asStored<PriorityLevelConfiguration>(p, i));
  return new FlowController(
    { flowSchemas: () => [...fss, ...extraFs], priorityLevels: () => [...pls, ...extraPl], objectCount: () => counts.objects, watchCount: () => counts.watchers ?? 0 },
    serverCL,
    15_000,
  );
}

const user = (username: string, ...groups: string[]): UserInfo => ({ username, groups: [...groups, 'system:authenticated'] });
const resource = (verb: string, apiGroup: string, resource: string, namespace = '', subresource = ''): RequestInfo =>
  ({ isResourceRequest: true, path: '/x', verb, apiPrefix: 'apis', apiGroup, requestedGroup: apiGroup, apiVersion: 'v1', namespace, resource, subresource, name: '', namespacedPath: !!namespace, verbFromPath: false }) as RequestInfo;
const nonResource = (verb: string, path: string): RequestInfo => ({ isResourceRequest: false, path, verb }) as RequestInfo;

t.test('classification: the first matching FlowSchema by precedence, as upstream configures them', async (t) => {
  const fc = controller();
  const rows: [string, UserInfo, RequestInfo, string, string, string][] = [
    ['system:masters: exempt', user('admin', 'system:masters'), resource('list', '', 'configmaps', 'a'), 'exempt', 'exempt', ''],
    ['a node renewing its Lease: node-high', user('system:node:n1', 'system:nodes'), resource('update', 'coordination.svc.io', 'leases', 'svc-node-lease'), 'system-node-high', 'node-high', 'system:node:n1'],
    ['a node updating its status: node-high', user('system:node:n1', 'system:nodes'), resource('patch', '', 'nodes', '', 'status'), 'system-node-high', 'node-high', 'system:node:n1'],
    ['a node reading ConfigMaps: system', user('system:node:n1', 'system:nodes'), resource('get', '', 'configmaps', 'a'), 'system-nodes', 'system', 'system:node:n1'],
    ['the controller manager on leases: leader election', user('system:svc-controller-manager'), resource('update', 'coordination.svc.io', 'leases', 'svc-system'), 'system-leader-election', 'leader-election', 'system:svc-controller-manager'],
    ['the controller manager elsewhere: by namespace', user('system:svc-controller-manager'), resource('list', '', 'secrets', 'team-a'), 'kube-controller-manager', 'workload-high', 'team-a'],
    ['a svc-system service account', user('system:serviceaccount:svc-system:gc', 'system:serviceaccounts'), resource('list', '', 'pods', 'b'), 'kube-system-service-accounts', 'workload-high', 'b'],
    ['another service account', user('system:serviceaccount:team:robot', 'system:serviceaccounts'), resource('list', '', 'pods', 'b'), 'service-accounts', 'workload-low', 'system:serviceaccount:team:robot'],
    ['a probe by anyone: exempt', user('alice'), nonResource('get', '/readyz'), 'probes', 'exempt', ''],
    ['anyone else: global-default', user('alice'), nonResource('get', '/version'), 'global-default', 'global-default', 'alice'],
    ['the anonymous user: global-default', { username: 'system:anonymous', groups: ['system:unauthenticated'] }, resource('get', '', 'configmaps', 'a'), 'global-default', 'global-default', 'system:anonymous'],
  ];
  for (const [name, u, info, fs, pl, distinguisher] of rows) {
    const c = fc.classify(u, info);
    t.same([c.schema.name, c.level.name, c.distinguisher], [fs, pl, distinguisher], name);
  }
});

t.test('classification: equal precedence goes by name; a schema naming a missing level is skipped; globs match prefixes', async (t) => {
  const mk = (name: string, precedence: number, level: string, nonResourceURLs: string[]): FlowSchema =>
    ({ metadata: { name, uid: name }, spec: { priorityLevelConfiguration: { name: level }, matchingPrecedence: precedence, rules: [{ subjects: [{ kind: 'User', user: { name: 'alice' } }], nonResourceRules: [{ verbs: ['get'], nonResourceURLs }] }] } }) as FlowSchema;
  const fc = controller([mk('b-second', 50, 'system', ['/apis/*']), mk('a-first', 50, 'workload-low', ['/apis/*']), mk('dangling', 10, 'gone', ['*'])]);
  const c = fc.classify(user('alice'), nonResource('get', '/apis/x'));
  t.equal(c.schema.name, 'a-first', 'same precedence: the name first in order wins; the dangling one (10) is skipped');
  t.equal(fc.classify(user('alice'), nonResource('get', '/api')).schema.name, 'global-default', 'a /apis/* glob does not match /api');
});

t.test('concurrency: nominal seats by shares, lendable and borrowing bounds; zero shares give zero nominal seats', async (t) => {
  const zero = { metadata: { name: 'zero', uid: 'z' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 0, limitResponse: { type: 'Reject' }, lendablePercent: 0, borrowingLimitPercent: 100 } } } as PriorityLevelConfiguration;
  const fc = controller([], [zero], {}, 600);
  const levels = new Map(fc.sortedLevels().map((l) => [l.name, l]));
  // shares: catch-all 5 + system 30 + node-high 40 + leader-election 10 + workload-high 40 + workload-low 100 + global-default 20 = 245
  t.equal(levels.get('node-high')!.nominalCL, Math.ceil((600 * 40) / 245));
  t.equal(levels.get('workload-low')!.lendableCL, Math.round((Math.ceil((600 * 100) / 245) * 90) / 100), 'workload-low lends 90%');
  t.equal(levels.get('leader-election')!.minCL, levels.get('leader-election')!.nominalCL, 'leader-election lends nothing');
  t.equal(levels.get('system')!.maxCL, 600, 'no borrowing limit: up to the whole server');
  t.equal(levels.get('zero')!.nominalCL, 0, 'zero shares: zero nominal seats');
  t.equal(levels.get('zero')!.maxCL, 0, 'and 100% of nothing to borrow');
  t.equal(levels.get('exempt')!.nominalCL, 0);
  fc.rebalance();
  const after = fc.sortedLevels();
  t.ok(after.reduce((a, l) => a + l.currentCL, 0) <= 600 + after.length, 're-balanced seats add up to the server (rounding aside)');
  t.ok(after.every((l) => l.currentCL >= Math.floor(l.minCL) - 1), 'no level below what it does not lend');
});

t.test("work estimates as upstream's: LIST seats by objects read, watches' initial burst, writes' extra seats with many watchers", async (t) => {
  const q = (s: string) => new URLSearchParams(s);
  const est = (objects: number | undefined, watchers: number, info: RequestInfo, query = '') => {
    const fc = controller([], [], { objects, watchers });
    const level = fc.classify(user('alice'), info).level;
    return fc.estimate(info, q(query), level);
  };
  const list = resource('list', '', 'configmaps', 'a');
  t.equal(est(50, 0, list).initialSeats, 1, '50 objects: one seat');
  t.equal(est(450, 0, list).initialSeats, 5, '450 objects: five seats');
  // global-default's nominal 49 seats of 600: at most ceil(15%) = 8 seats a request (never more than 10)
  t.equal(est(100_000, 0, list).initialSeats, 8, "at most the level's maximum seats");
  t.equal(est(undefined, 0, list).initialSeats, 1, 'an uncached resource: one seat');
  t.equal(est(5000, 0, list, 'limit=100&continue=abc').initialSeats, 2, 'a page read from the store: twice the limit');
  t.equal(est(450, 0, resource('watch', '', 'configmaps', 'a')).initialSeats, 5, 'a watch from now: its initial burst');
  t.equal(est(450, 0, resource('watch', '', 'configmaps', 'a'), 'resourceVersion=77').initialSeats, 1, 'a resumed watch: one seat');
  t.same(est(10, 5, resource('update', '', 'configmaps', 'a')), { initialSeats: 1, finalSeats: 0, additionalLatencyMs: 0 }, 'a write with few watchers: one seat');
  t.same(est(10, 50, resource('update', '', 'configmaps', 'a')), { initialSeats: 1, finalSeats: 5, additionalLatencyMs: 5 }, 'a write with 50 watchers: 5 final seats for 5 ms');
  t.equal(est(10, 0, resource('get', '', 'configmaps', 'a')).initialSeats, 1, 'a GET: one seat');
});
