/**
 * API Priority and Fairness against real servers on loopback: the PF headers of every answer, 429
 * with Retry-After from a saturated level (Reject and Queue: concurrency limit, full queue, time-out),
 * exempt requests passing meanwhile, gRPC refused the same way, the metrics and the debug dumps, the
 * fallback to the in-flight limits, and the start errors.
 */
import t from 'tap';
import { runtimeConfigConflict } from '../../core/server/features/flowcontrol.js';
import { status as Code } from '@grpc/grpc-js';
import { servedTypesFor } from '../../core/registry/enablement.js';
import { parseFlags } from '../../core/server/options.js';
import { overGrpc, startGrpcServer } from '../helpers/grpc.js';
import { ALICE_TOKEN, BOB_TOKEN, startServer, type TestServer } from '../helpers/server.js';
import { FS, PL, stalledUpload, tinyLevel } from '../helpers/flowcontrol.js';

const FS_UID = 'x-kubernetes-pf-flowschema-uid';
const PL_UID = 'x-kubernetes-pf-prioritylevel-uid';

const uidOf = async (s: TestServer, path: string): Promise<string> => (await s.admin.get(path)).json.metadata.uid;

t.test('every answer names its FlowSchema and priority level by UID, refusals included', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const alice = s.admin.with({ token: ALICE_TOKEN });
  const rows: [string, () => ReturnType<TestServer['admin']['get']>, string, string, number][] = [
    ['system:masters: exempt', () => s.admin.get('/api/v1/namespaces'), 'exempt', 'exempt', 200],
    ['an ordinary user: global-default (answered 403 by authorization, which runs after)', () => alice.get('/api/v1/namespaces/default/secrets'), 'global-default', 'global-default', 403],
    ['a probe by anyone: probes, at the exempt level', () => s.anon.get('/readyz'), 'probes', 'exempt', 200],
    ['the version of an ordinary user: global-default', () => alice.get('/version'), 'global-default', 'global-default', 200],
  ];
  for (const [name, call, fs, pl, code] of rows) {
    const r = await call();
    t.equal(r.status, code, `${name}: ${code}`);
    t.equal(r.headers[FS_UID], await uidOf(s, `${FS}/${fs}`), `${name}: FlowSchema ${fs}`);
    t.equal(r.headers[PL_UID], await uidOf(s, `${PL}/${pl}`), `${name}: priority level ${pl}`);
  }
  // a watch is classified too (its seats come back once it has started)
  const w = await alice.stream('/api/v1/namespaces/default/configmaps?watch=true');
  t.equal(w.headers[FS_UID], await uidOf(s, `${FS}/global-default`), 'a watch names its FlowSchema');
  w.close();
  // the debug dumps, for those allowed to read them
  for (const dump of ['dump_priority_levels', 'dump_queues', 'dump_requests']) {
    const path = `/debug/api_priority_and_fairness/${dump}`;
    const r = await s.admin.get(path);
    t.equal(r.status, 200, `${dump}: system:masters may read it`);
    t.equal((await alice.get(path)).status, 403, `${dump}: an ordinary user may not`);
  }
  const levels = (await s.admin.get('/debug/api_priority_and_fairness/dump_priority_levels')).text.split('\n');
  t.match(levels[0], /^PriorityLevelName, +ActiveQueues, +IsIdle, +IsQuiescing, +WaitingRequests, +ExecutingRequests, +DispatchedRequests, +RejectedRequests, +TimedoutRequests, +CancelledRequests$/);
  t.same(
    levels.slice(1).filter(Boolean).map((l) => l.split(',')[0]),
    ['catch-all', 'exempt', 'global-default', 'leader-election', 'node-high', 'system', 'workload-high', 'workload-low'],
    'one row per level, by name',
  );
  t.match((await s.admin.get('/debug/api_priority_and_fairness/dump_queues')).text, /^PriorityLevelName, +Index, +PendingRequests, +ExecutingRequests, +SeatsInUse, +NextDispatchR, +InitialSeatsSum, +MaxSeatsSum, +TotalWorkSum\n/);
  t.match((await s.admin.get('/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1')).text, /^PriorityLevelName, +FlowSchemaName, +QueueIndex, +RequestIndexInQueue, +FlowDistingsher, +ArriveTime, .*UserName, +Verb, +APIPath/);
});

t.test('a saturated level answers 429 with Retry-After while exempt requests and other levels pass; its metrics say why', async (t) => {
  const s = await startServer(['--authorization-mode=AlwaysAllow', '--max-requests-inflight=1', '--max-mutating-requests-inflight=1', '--request-timeout=4s']);
  t.teardown(() => s.stop());
  await tinyLevel(s, 'tiny-reject', 'alice', { type: 'Reject' });
  await tinyLevel(s, 'tiny-queue', 'bob', { type: 'Queue', queuing: { queues: 1, handSize: 1, queueLengthLimit: 1 } });
  const alice = s.admin.with({ token: ALICE_TOKEN });
  const bob = s.admin.with({ token: BOB_TOKEN });
  t.equal((await alice.get('/api/v1/namespaces/default/configmaps')).status, 200, 'the level serves while it has its seat');
  const watches = [await alice.stream('/api/v1/namespaces/default/configmaps?watch=true'), await alice.stream('/api/v1/namespaces/default/configmaps?watch=true')];
  t.same(
    watches.map((w) => w.status),
    [200, 200],
    "a watch holds the level's one seat only while it starts: a second one starts after it",
  );
  t.equal((await alice.get('/api/v1/namespaces/default/configmaps')).status, 200, 'and so does a GET while both stay open');
  for (const w of watches) w.close();
  const held = [await stalledUpload(s, ALICE_TOKEN, 'held-a'), await stalledUpload(s, BOB_TOKEN, 'held-b')];
  t.teardown(() => held.forEach((x) => x.destroy()));
  await new Promise((r) => setTimeout(r, 300));

  const refused = await alice.get('/api/v1/namespaces/default/configmaps');
  t.equal(refused.status, 429, 'Reject: the one seat is taken, so the request is refused');
  t.equal(refused.headers['retry-after'], '1', 'with Retry-After');
  // as upstream's filter (http.Error): plain text, not a Status
  t.equal(refused.text, 'Too many requests, please try again later.\n');
  t.match(refused.headers['content-type'], /^text\/plain; charset=utf-8/);
  t.equal(refused.headers['x-content-type-options'], 'nosniff');
  t.equal(refused.headers[FS_UID], await uidOf(s, `${FS}/tiny-reject`), 'the refusal names the FlowSchema');

  t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps')).status, 200, 'system:masters passes (exempt)');
  t.equal((await alice.get('/readyz')).status, 200, 'a probe by the same user passes (exempt)');

  // Queue: one waits (and times out after a quarter of the request timeout), the next finds the queue full
  const waiting = bob.get('/api/v1/namespaces/default/configmaps');
  await new Promise((r) => setTimeout(r, 100));
  const full = await bob.get('/api/v1/namespaces/default/configmaps');
  t.equal(full.status, 429, 'Queue: the queue is full');
  t.ok(full.headers['retry-after'], 'with Retry-After');
  const timedOut = await waiting;
  t.equal(timedOut.status, 429, 'the waiting request is refused when its wait limit passes');

  // a client that ignores 429 and keeps at it: refused every time, the server keeps serving
  const hammer = await Promise.all(Array.from({ length: 50 }, () => alice.get('/api/v1/namespaces/default/configmaps')));
  t.same([...new Set(hammer.map((r) => r.status))], [429], 'a client ignoring 429 gets 429');
  t.equal((await s.admin.get('/readyz')).status, 200, 'the server serves throughout');

  const metrics = (await s.admin.get('/metrics')).text;
  t.match(metrics, /^apiserver_flowcontrol_rejected_requests_total\{flow_schema="tiny-reject",priority_level="tiny-reject",reason="concurrency-limit"\} \d+/m, 'rejections by reason');
  t.match(metrics, /^apiserver_flowcontrol_rejected_requests_total\{flow_schema="tiny-queue",priority_level="tiny-queue",reason="queue-full"\} 1/m);
  t.match(metrics, /^apiserver_flowcontrol_rejected_requests_total\{flow_schema="tiny-queue",priority_level="tiny-queue",reason="time-out"\} 1/m);
  t.match(metrics, /^apiserver_flowcontrol_dispatched_requests_total\{flow_schema="exempt",priority_level="exempt"\} \d+/m);
  t.match(metrics, /^apiserver_flowcontrol_nominal_limit_seats\{priority_level="tiny-reject"\} 1$/m);
  t.match(metrics, /^apiserver_flowcontrol_current_executing_requests\{flow_schema="tiny-reject",priority_level="tiny-reject"\} 1$/m, 'the held upload is executing');
  t.match(metrics, /^apiserver_flowcontrol_request_wait_duration_seconds_bucket\{execute="false",flow_schema="tiny-queue",priority_level="tiny-queue",le="0"\}/m);
  const stability: [string, string][] = [
    ['apiserver_flowcontrol_dispatched_requests_total', 'BETA'],
    ['apiserver_flowcontrol_rejected_requests_total', 'BETA'],
    ['apiserver_flowcontrol_current_inqueue_requests', 'BETA'],
    ['apiserver_flowcontrol_current_executing_requests', 'BETA'],
    ['apiserver_flowcontrol_current_executing_seats', 'BETA'],
    ['apiserver_flowcontrol_request_wait_duration_seconds', 'BETA'],
    ['apiserver_flowcontrol_nominal_limit_seats', 'BETA'],
    ['apiserver_flowcontrol_current_limit_seats', 'ALPHA'],
    ['apiserver_flowcontrol_lower_limit_seats', 'ALPHA'],
    ['apiserver_flowcontrol_upper_limit_seats', 'ALPHA'],
    ['apiserver_flowcontrol_demand_seats_high_watermark', 'ALPHA'],
    ['apiserver_flowcontrol_seat_fair_frac', 'ALPHA'],
  ];
  for (const [name, cls] of stability) t.match(metrics, new RegExp(`^# HELP ${name} \\[${cls}\\] `, 'm'), `${name} is ${cls}`);
});

t.test('gRPC requests are classified and refused the same way', async (t) => {
  const s = await startGrpcServer(['--authorization-mode=AlwaysAllow', '--max-requests-inflight=1', '--max-mutating-requests-inflight=1', '--request-timeout=4s']);
  t.teardown(() => s.stop());
  await tinyLevel(s, 'tiny-grpc', 'alice', { type: 'Reject' });
  const list = { verb: 'list' as const, ref: { version: 'v1', resource: 'configmaps', namespace: 'default' } };
  t.equal((await overGrpc(s.grpc({ token: ALICE_TOKEN }), list)).code, Code.OK, 'served while the seat is free');
  const held = await stalledUpload(s, ALICE_TOKEN, 'held-g');
  t.teardown(() => held.destroy());
  await new Promise((r) => setTimeout(r, 300));
  t.equal((await overGrpc(s.grpc({ token: ALICE_TOKEN }), list)).code, Code.RESOURCE_EXHAUSTED, 'the same user over gRPC is refused (429)');
  t.equal((await overGrpc(s.g, list)).code, Code.OK, 'system:masters over gRPC passes');
});

t.test('--enable-priority-and-fairness=false: the in-flight limits, no PF headers, no APF hooks', async (t) => {
  const s = await startServer(['--enable-priority-and-fairness=false']);
  t.teardown(() => s.stop());
  const r = await s.admin.get('/api/v1/namespaces');
  t.equal(r.status, 200);
  t.notOk(r.headers[FS_UID], 'no FlowSchema header');
  t.equal((await s.admin.get('/readyz/poststarthook/max-in-flight-filter')).status, 200, "upstream's hook of the in-flight filter");
  t.equal((await s.admin.get('/readyz/poststarthook/priority-and-fairness-filter')).status, 404);
  t.equal((await s.admin.get('/debug/api_priority_and_fairness/dump_priority_levels')).status, 404, 'no dumps');
  const on = await startServer();
  t.teardown(() => on.stop());
  t.equal((await on.admin.get('/readyz/poststarthook/priority-and-fairness-filter')).status, 200, 'on by default');
  t.equal((await on.admin.get('/readyz/poststarthook/priority-and-fairness-config-producer')).status, 200);
});

t.test('start errors: a removed flowcontrol version named in --runtime-config, and a total concurrency of zero', async (t) => {
  for (const gv of ['flowcontrol.apiserver.svc.io/v1beta3', 'flowcontrol.apiserver.k8s.io/v1beta3', 'flowcontrol.apiserver.svc.io/v1beta2', 'flowcontrol.apiserver.svc.io/v1beta1']) {
    t.throws(() => servedTypesFor({}, parseFlags([`--runtime-config=${gv}=true`]).runtimeConfig), { message: `group version ${gv} that has not been registered` }, `${gv}=true`);
  }
  await t.rejects(startServer(['--runtime-config=flowcontrol.apiserver.svc.io/v1beta3=true']), /flowcontrol\.apiserver\.svc\.io/, 'the server does not start');
  // the dispatcher reads its configuration in v1: turning that off is upstream's start error, unless APF is off
  await t.rejects(startServer(['--runtime-config=flowcontrol.apiserver.k8s.io/v1=false']), /--runtime-config=flowcontrol\.apiserver\.k8s\.io\/v1=false conflicts with --enable-priority-and-fairness=true/);
  await t.rejects(startServer(['--runtime-config=api/all=false,v1=true']), /--runtime-config=api\/all=false conflicts with --enable-priority-and-fairness=true/);
  const off = await startServer(['--runtime-config=flowcontrol.apiserver.svc.io/v1=false', '--enable-priority-and-fairness=false']);
  t.equal((await off.admin.get('/apis/flowcontrol.apiserver.svc.io/v1/flowschemas')).status, 404, 'without APF the version may be off');
  await off.stop();
  t.same(runtimeConfigConflict({ 'api/all': false, 'flowcontrol.apiserver.svc.io/v1': true }), undefined, 'the more specific key decides');
  await t.rejects(startServer(['--max-requests-inflight=0', '--max-mutating-requests-inflight=0']), /MaxRequestsInFlight=0 and MaxMutatingRequestsInFlight=0; they must add up to something positive/);
});
