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

t.test("classification: a user's repeated request finds what its last one found, and anything the rules read classifies again", async (t) => {
  const extra: FlowSchema[] = [];
  const fc = controller(extra);
  const node = user('system:node:n1', 'system:nodes');
  const lease = resource('update', 'coordination.svc.io', 'leases', 'svc-node-lease');
  const first = fc.classify(node, lease);
  const again = fc.classify(user('system:node:n1', 'system:nodes'), resource('update', 'coordination.svc.io', 'leases', 'svc-node-lease'));
  t.equal(again.schema, first.schema, 'the same shape from an equal user: the same schema');
  t.equal(again.flowKey, first.flowKey, 'and the same flow');
  // each row changes one thing the rules or the distinguisher read, after the same first request
  const rows: [string, UserInfo, RequestInfo, string][] = [
    ['other groups', user('system:node:n1'), lease, 'global-default'],
    ['another resource', node, resource('update', '', 'configmaps', 'svc-node-lease'), 'system-nodes'],
    ['another group', node, resource('update', 'other.io', 'leases', 'svc-node-lease'), 'system-nodes'],
    ['a subresource', node, resource('patch', '', 'nodes', '', 'status'), 'system-node-high'],
    ['a path, not a resource', node, nonResource('get', '/readyz'), 'probes'],
  ];
  for (const [name, u, info, fs] of rows) {
    fc.classify(node, lease);
    t.equal(fc.classify(u, info).schema.name, fs, name);
  }
  const cm = user('system:svc-controller-manager');
  fc.classify(cm, resource('update', 'coordination.svc.io', 'leases', 'svc-system'));
  t.equal(fc.classify(cm, resource('list', 'coordination.svc.io', 'leases', 'svc-system')).schema.name, 'kube-controller-manager', 'another verb');
  t.equal(fc.classify(user('alice'), nonResource('get', '/healthz')).schema.name, 'probes', 'another user: their own');
  t.equal(fc.classify(user('alice'), nonResource('get', '/version')).schema.name, 'global-default', 'another path of theirs');
  // a new schema in front of node-high: the next identical request follows the new configuration
  extra.push({ metadata: { name: 'nodes-first', uid: 'nf' }, spec: { priorityLevelConfiguration: { name: 'workload-low' }, matchingPrecedence: 1, rules: [{ subjects: [{ kind: 'Group', group: { name: 'system:nodes' } }], resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'] }] }] } } as FlowSchema);
  fc.invalidate();
  t.equal(fc.classify(node, lease).schema.name, 'nodes-first', 'a configuration change: classified again');
});

t.test('classification: equal precedence goes by name; a schema naming a missing level is skipped; globs match prefixes', async (t) => {
  const mk = (name: string, precedence: number, level: string, nonResourceURLs: string[]): FlowSchema =>
    ({ metadata: { name, uid: name }, spec: { priorityLevelConfiguration: { name: level }, matchingPrecedence: precedence, rules: [{ subjects: [{ kind: 'User', user: { name: 'alice' } }], nonResourceRules: [{ verbs: ['get'], nonResourceURLs }] }] } }) as FlowSchema;
  const fc = controller([mk('b-second', 50, 'system', ['/apis/*']), mk('a-first', 50, 'workload-low', ['/apis/*']), mk('dangling', 10, 'gone', ['*'])]);
  const c = fc.classify(user('alice'), nonResource('get', '/apis/x'));
  t.equal(c.schema.name, 'a-first', 'same precedence: the name first in order wins; the dangling one (10) is skipped');
  t.equal(fc.classify(user('alice'), nonResource('get', '/api')).schema.name, 'global-default', 'a /apis/* glob does not match /api');
});

t.test("concurrency as upstream's digest: nominal seats by shares (rounded up), lendable and borrowing bounds, a new level's half-lent start, max seats", async (t) => {
  const zero = { metadata: { name: 'zero', uid: 'z' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 0, limitResponse: { type: 'Reject' }, lendablePercent: 0, borrowingLimitPercent: 100 } } } as PriorityLevelConfiguration;
  const fc = controller([], [zero], {}, 600);
  // shares: catch-all 5 + system 30 + node-high 40 + leader-election 10 + workload-high 40 + workload-low 100 + global-default 20 = 245
  // name, nominal ceil(600 x shares / 245), lendable round(nominal x lendable%), min, max (nominal + borrowing, the server's seats when unlimited),
  // starting current seats (nominal - floor(lendable / 2)), max seats a request (max(1, min(ceil(15% nominal), floor(nominal / handSize))); 0 without queues)
  const want: [string, number, number, number, number, number][] = [
    ['catch-all', 13, 0, 13, 613, 0],
    ['exempt', 0, 0, 0, 600, 0],
    ['global-default', 49, 25, 24, 649, 8],
    ['leader-election', 25, 0, 25, 625, 4],
    ['node-high', 98, 25, 73, 698, 15],
    ['system', 74, 24, 50, 674, 12],
    ['workload-high', 98, 49, 49, 698, 15],
    ['workload-low', 245, 221, 24, 845, 37],
    ['zero', 0, 0, 0, 0, 0],
  ];
  const levels = fc.sortedLevels();
  t.same(
    levels.map((l) => [l.name, l.nominalCL, l.lendableCL, l.minCL, l.maxCL, l.maxSeats]),
    want,
  );
  t.equal(fc.nominalCLSum, 13 + 49 + 25 + 98 + 74 + 98 + 245, "the nominal seats' sum, a little above the server's 600");
  t.equal(fc.maxWaitingRequests, 128 * 50 * 3 + 64 * 50 * 2 + 16 * 50, "queues x queue length over the levels' queues");
  // the controller re-balanced at the digest (no demand yet): every level between its bounds
  t.ok(levels.every((l) => l.currentCL >= l.minCL && l.currentCL <= l.maxCL), 'every level between its lower and upper bound');
  // a level with no demand is held at its lower bound when others want its seats; max seats capped at 10 by the estimators
  const list = resource('list', '', 'configmaps', 'a');
  const big = controller([], [], { objects: 100_000 });
  const node = big.sortedLevels().find((l) => l.name === 'node-high')!;
  t.equal(big.estimate(list, new URLSearchParams(), node).initialSeats, 10, "node-high's 15 max seats are capped at the estimators' 10");
  const fresh = controller([], [], {}, 600);
  const wl = fresh.sortedLevels().find((l) => l.name === 'workload-low')!;
  t.equal(wl.lendableCL, 221);
});

t.test("work estimates as upstream's v1.32: LIST seats by objects read, watches asking for initial events, writes' extra seats with many watchers", async (t) => {
  const q = (s: string) => new URLSearchParams(s);
  const est = (objects: number | undefined, watchers: number, info: RequestInfo, query = '') => {
    const fc = controller([], [], { objects, watchers });
    const level = fc.classify(user('alice'), info).level;
    const { watchCount: _w, ...w } = fc.estimate(info, q(query), level);
    return w;
  };
  const seats = (initialSeats: number) => ({ initialSeats, finalSeats: 0, additionalLatencyMs: 0 });
  const list = resource('list', '', 'configmaps', 'a');
  const named = { ...list, name: 'one' } as RequestInfo;
  const watch = resource('watch', '', 'configmaps', 'a');
  const update = resource('update', '', 'configmaps', 'a');
  const rows: [string, number | undefined, number, RequestInfo, string, { initialSeats: number; finalSeats: number; additionalLatencyMs: number }][] = [
    ['50 objects: one seat', 50, 0, list, '', seats(1)],
    ['450 objects: five seats', 450, 0, list, '', seats(5)],
    // global-default: nominal 49, max(1, min(ceil(7.35), floor(49 / 6))) = 8
    ["100,000 objects: the level's max seats", 100_000, 0, list, '', seats(8)],
    ['an uncounted resource: one seat', undefined, 0, list, '', seats(1)],
    ['a LIST of one name (fieldSelector metadata.name): one seat', 5000, 0, named, '', seats(1)],
    ['a page continued from the store: twice the limit', 5000, 0, list, 'limit=100&continue=abc', seats(2)],
    ['an exact resourceVersion with a limit is read from the store: twice the limit', 5000, 0, list, 'limit=100&resourceVersion=77', seats(2)],
    ['resourceVersionMatch=Exact is read from the store; with a selector: stored + limit', 5000, 0, list, 'limit=100&resourceVersion=77&resourceVersionMatch=Exact&labelSelector=a%3Db', seats(8)],
    ['a consistent LIST with a limit is served by the cache: every object', 450, 0, list, 'limit=100', seats(5)],
    ['a watch asking for its initial events: as its LIST', 450, 0, watch, 'sendInitialEvents=true&resourceVersionMatch=NotOlderThan', seats(5)],
    ['a watch from now without sendInitialEvents: one seat', 450, 0, watch, '', seats(1)],
    ['a resumed watch: one seat', 450, 0, watch, 'resourceVersion=77', seats(1)],
    ['a write with 9 watchers: one seat', 10, 9, update, '', seats(1)],
    ['a write with 50 watchers: 5 final seats for 5 ms', 10, 50, update, '', { initialSeats: 1, finalSeats: 5, additionalLatencyMs: 5 }],
    ["a write with 1,000 watchers: 100 seats' work reshaped into the level's 8, 62.5 ms", 10, 1000, update, '', { initialSeats: 1, finalSeats: 8, additionalLatencyMs: 62.5 }],
    ['deletecollection is not estimated as a write: one seat', 10, 1000, resource('deletecollection', '', 'configmaps', 'a'), '', seats(1)],
    ['a service account token makes no event: one seat', 10, 1000, resource('create', '', 'serviceaccounts', 'a', 'token'), '', seats(1)],
    ['a GET: one seat', 10, 1000, resource('get', '', 'configmaps', 'a'), '', seats(1)],
  ];
  for (const [name, objects, watchers, info, query, want] of rows) t.same(est(objects, watchers, info, query), want, name);
  const fc = controller([], [], { objects: 1, watchers: 3 });
  const level = fc.classify(user('alice'), update).level;
  t.equal(fc.estimate(update, q(''), level).watchCount, 3, 'every write estimated reports its watchers (watch_count_samples), few or many');
});

t.test('quiescing: a level that leaves the configuration keeps its queues and shares while busy, is forgotten when drained, and is taken back as it was when restored', async (t) => {
  const extra: PriorityLevelConfiguration[] = [
    { metadata: { name: 'busy', uid: 'b' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 10, lendablePercent: 0, limitResponse: { type: 'Queue', queuing: { queues: 4, handSize: 2, queueLengthLimit: 5 } } } } } as PriorityLevelConfiguration,
  ];
  const fss = [...mandatoryFlowSchemas, ...suggestedFlowSchemas].map((f, i) => asStored<FlowSchema>(f, i));
  const pls = [...mandatoryPriorityLevels, ...suggestedPriorityLevels].map((p, i) => asStored<PriorityLevelConfiguration>(p, i));
  const fc = new FlowController({ flowSchemas: () => fss, priorityLevels: () => [...pls, ...extra], objectCount: () => undefined, watchCount: () => 0 }, 600, 15_000);
  const busy = fc.sortedLevels().find((l) => l.name === 'busy')!;
  const run = busy.qs.start('f', { initialSeats: 1, finalSeats: 0, additionalLatencyMs: 0 });
  const kept = extra.splice(0);
  fc.invalidate();
  const during = fc.sortedLevels().find((l) => l.name === 'busy');
  t.equal(during, busy, 'deleted while a request runs: the same level (and queue set) stays');
  t.ok(during!.quiescing, 'quiescing');
  t.ok(during!.nominalCL > 0, 'its shares still count: it keeps seats to drain with');
  extra.push(...kept);
  fc.invalidate();
  const restored = fc.sortedLevels().find((l) => l.name === 'busy')!;
  t.equal(restored, busy, 'restored while quiescing: taken back with its queues');
  t.notOk(restored.quiescing, 'no longer quiescing');
  extra.splice(0);
  fc.invalidate();
  t.ok(fc.sortedLevels().find((l) => l.name === 'busy')!.quiescing, 'deleted again: quiescing');
  (run as { finish(): void }).finish();
  t.notOk(fc.sortedLevels().some((l) => l.name === 'busy'), 'drained: forgotten at the next digest');
});

t.test("a schema naming a level that is not stored is skipped, a mandatory level's included; the mandatory schemas stand in first and last, as upstream's digest", async (t) => {
  const fss = [...mandatoryFlowSchemas, ...suggestedFlowSchemas].map((f, i) => asStored<FlowSchema>(f, i));
  // every level stored but exempt: the exempt level is imagined, yet schemas naming it are dangling
  const pls = [...mandatoryPriorityLevels, ...suggestedPriorityLevels].filter((p) => p.metadata.name !== 'exempt').map((p, i) => asStored<PriorityLevelConfiguration>(p, i));
  const fc = new FlowController({ flowSchemas: () => fss, priorityLevels: () => pls, objectCount: () => undefined, watchCount: () => 0 }, 600, 15_000);
  const probe = fc.classify(user('alice'), nonResource('get', '/readyz'));
  t.same([probe.schema.name, probe.level.name], ['global-default', 'global-default'], "the probes schema names the unstored exempt level: skipped, global-default serves the probe");
  const admin = fc.classify(user('admin', 'system:masters'), resource('list', '', 'configmaps', 'a'));
  t.same([admin.schema.name, admin.schema.uid, admin.level.name, admin.level.uid], ['exempt', '', 'exempt', ''], 'system:masters: the stand-in exempt schema and level (no UIDs)');
  // no schemas stored at all: the two stand-ins alone
  const bare = new FlowController({ flowSchemas: () => [], priorityLevels: () => [], objectCount: () => undefined, watchCount: () => 0 }, 600, 15_000);
  t.same([bare.classify(user('alice'), nonResource('get', '/version')).schema.name, bare.classify(user('admin', 'system:masters'), nonResource('get', '/version')).schema.name], ['catch-all', 'exempt']);
});

t.test("borrowing as upstream's updateBorrowingLocked: a level whose demand passed its nominal seats borrows what idle levels lend, in proportion to the targets", async (t) => {
  const fc = controller([], [], {}, 600);
  const levels = new Map(fc.sortedLevels().map((l) => [l.name, l]));
  const gd = levels.get('global-default')!;
  // global-default wants 100 seats for the whole period; the others want none
  gd.demand.set(100);
  await new Promise((r) => setTimeout(r, 50));
  fc.rebalance();
  // lower bounds: global-default max(24, min(49, 100)) = 49, the others what they do not lend; targets:
  // global-default about 100 (average plus deviation), the others their lower bounds; the nominal sum 602
  // is shared as f x target with f = 602 / (100 + 13 + 25 + 73 + 50 + 49 + 24) = 1.80
  t.equal(gd.demandHighWatermark, 100, 'high watermark of the period');
  t.ok(gd.demandAverage > 95 && gd.demandAverage <= 100, `time-weighted average (${gd.demandAverage})`);
  t.ok(gd.currentCL > 160 && gd.currentCL < 200, `global-default borrows: ${gd.currentCL} seats of its nominal 49`);
  t.ok(fc.fairFrac > 1.6 && fc.fairFrac < 2, `the fair fraction (${fc.fairFrac})`);
  for (const name of ['catch-all', 'leader-election', 'node-high', 'system', 'workload-high', 'workload-low']) {
    const l = levels.get(name)!;
    t.ok(l.currentCL >= l.minCL, `${name}: at least what it does not lend (${l.currentCL} >= ${l.minCL})`);
  }
  const sum = [...levels.values()].reduce((a, l) => a + l.currentCL, 0);
  t.ok(Math.abs(sum - fc.nominalCLSum) <= levels.size, `the levels' seats add up to the nominal sum, rounding aside (${sum} of ${fc.nominalCLSum})`);
  t.equal(levels.get('exempt')!.currentCL, 0, 'the exempt level keeps what it used: nothing');
});
