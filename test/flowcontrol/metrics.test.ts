/**
 * API Priority and Fairness's metrics on a real server: every family of upstream v1.32's
 * pkg/util/flowcontrol/metrics/metrics.go with its type, stability class, help and labels, and the
 * level and dispatch figures moving as real requests hold seats, wait in a queue and are dispatched.
 */
import t from 'tap';
import { parsePrometheusText, type PromFamily } from '../helpers/prometheus.js';
import { BOB_TOKEN, startServer, type TestServer } from '../helpers/server.js';
import { FS, stalledUpload, tinyLevel } from '../helpers/flowcontrol.js';
import { waitFor } from '../helpers/wait.js';

const PAIR = ['flow_schema', 'priority_level'];
const LEVEL = ['priority_level'];

/** name, type, stability, help (upstream's words; a deprecated one with the spec's prefix), label names (sorted). */
const UPSTREAM: [string, string, string, string, string[]][] = [
  ['apiserver_flowcontrol_rejected_requests_total', 'counter', 'BETA', 'Number of requests rejected by API Priority and Fairness subsystem', [...PAIR, 'reason']],
  ['apiserver_flowcontrol_dispatched_requests_total', 'counter', 'BETA', 'Number of requests executed by API Priority and Fairness subsystem', PAIR],
  [
    'apiserver_flowcontrol_priority_level_seat_utilization',
    'histogram',
    'ALPHA',
    'Observations, at the end of every nanosecond, of utilization of seats for any stage of execution (but only initial stage for WATCHes)',
    ['phase', 'priority_level'],
  ],
  [
    'apiserver_flowcontrol_priority_level_request_utilization',
    'histogram',
    'ALPHA',
    'Observations, at the end of every nanosecond, of number of requests (as a fraction of the relevant limit) waiting or in any stage of execution (but only initial stage for WATCHes)',
    ['phase', 'priority_level'],
  ],
  [
    'apiserver_flowcontrol_read_vs_write_current_requests',
    'histogram',
    'ALPHA',
    'Observations, at the end of every nanosecond, of the number of requests (as a fraction of the relevant limit) waiting or in regular stage of execution',
    ['phase', 'request_kind'],
  ],
  ['apiserver_flowcontrol_current_r', 'gauge', 'ALPHA', 'R(time of last change)', LEVEL],
  ['apiserver_flowcontrol_dispatch_r', 'gauge', 'ALPHA', 'R(time of last dispatch)', LEVEL],
  ['apiserver_flowcontrol_latest_s', 'gauge', 'ALPHA', 'S(most recently dispatched request)', LEVEL],
  ['apiserver_flowcontrol_next_s_bounds', 'gauge', 'ALPHA', 'min and max, over queues, of S(oldest waiting request in queue)', ['bound', 'priority_level']],
  ['apiserver_flowcontrol_next_discounted_s_bounds', 'gauge', 'ALPHA', 'min and max, over queues, of S(oldest waiting request in queue) - estimated work in progress', ['bound', 'priority_level']],
  ['apiserver_flowcontrol_current_inqueue_requests', 'gauge', 'BETA', 'Number of requests currently pending in queues of the API Priority and Fairness subsystem', PAIR],
  ['apiserver_flowcontrol_current_inqueue_seats', 'gauge', 'ALPHA', 'Number of seats currently pending in queues of the API Priority and Fairness subsystem', PAIR],
  ['apiserver_flowcontrol_request_queue_length_after_enqueue', 'histogram', 'ALPHA', 'Length of queue in the API Priority and Fairness subsystem, as seen by each request after it is enqueued', PAIR],
  ['apiserver_flowcontrol_request_concurrency_limit', 'gauge', 'ALPHA', '(Deprecated from 1.30) Nominal number of execution seats configured for each priority level', LEVEL],
  [
    'apiserver_flowcontrol_current_executing_requests',
    'gauge',
    'BETA',
    'Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem',
    PAIR,
  ],
  [
    'apiserver_flowcontrol_current_executing_seats',
    'gauge',
    'BETA',
    'Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem',
    PAIR,
  ],
  [
    'apiserver_flowcontrol_request_concurrency_in_use',
    'gauge',
    'ALPHA',
    '(Deprecated from 1.31) Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem',
    PAIR,
  ],
  ['apiserver_flowcontrol_request_wait_duration_seconds', 'histogram', 'BETA', 'Length of time a request spent waiting in its queue', ['execute', ...PAIR]],
  [
    'apiserver_flowcontrol_request_execution_seconds',
    'histogram',
    'ALPHA',
    'Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem',
    [...PAIR, 'type'],
  ],
  ['apiserver_flowcontrol_watch_count_samples', 'histogram', 'ALPHA', 'count of watchers for mutating requests in API Priority and Fairness', PAIR],
  ['apiserver_flowcontrol_epoch_advance_total', 'counter', 'ALPHA', "Number of times the queueset's progress meter jumped backward", ['priority_level', 'success']],
  ['apiserver_flowcontrol_work_estimated_seats', 'histogram', 'ALPHA', 'Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness', PAIR],
  [
    'apiserver_flowcontrol_request_dispatch_no_accommodation_total',
    'counter',
    'ALPHA',
    'Number of times a dispatch attempt resulted in a non accommodation due to lack of available seats',
    PAIR,
  ],
  ['apiserver_flowcontrol_nominal_limit_seats', 'gauge', 'BETA', 'Nominal number of execution seats configured for each priority level', LEVEL],
  ['apiserver_flowcontrol_lower_limit_seats', 'gauge', 'ALPHA', 'Configured lower bound on number of execution seats available to each priority level', LEVEL],
  ['apiserver_flowcontrol_upper_limit_seats', 'gauge', 'ALPHA', 'Configured upper bound on number of execution seats available to each priority level', LEVEL],
  [
    'apiserver_flowcontrol_demand_seats',
    'histogram',
    'ALPHA',
    'Observations, at the end of every nanosecond, of (the number of seats each priority level could use) / (nominal number of seats for that level)',
    LEVEL,
  ],
  ['apiserver_flowcontrol_demand_seats_high_watermark', 'gauge', 'ALPHA', 'High watermark, over last adjustment period, of demand_seats', LEVEL],
  ['apiserver_flowcontrol_demand_seats_average', 'gauge', 'ALPHA', 'Time-weighted average, over last adjustment period, of demand_seats', LEVEL],
  ['apiserver_flowcontrol_demand_seats_stdev', 'gauge', 'ALPHA', 'Time-weighted standard deviation, over last adjustment period, of demand_seats', LEVEL],
  ['apiserver_flowcontrol_demand_seats_smoothed', 'gauge', 'ALPHA', 'Smoothed seat demands', LEVEL],
  ['apiserver_flowcontrol_target_seats', 'gauge', 'ALPHA', 'Seat allocation targets', LEVEL],
  ['apiserver_flowcontrol_seat_fair_frac', 'gauge', 'ALPHA', "Fair fraction of server's concurrency to allocate to each priority level that can use it", []],
  ['apiserver_flowcontrol_current_limit_seats', 'gauge', 'ALPHA', 'current derived number of execution seats available to each priority level', LEVEL],
];

let s: TestServer;
t.before(async () => {
  // two seats in all: the one-share level below gets one
  s = await startServer(['--authorization-mode=AlwaysAllow', '--max-requests-inflight=1', '--max-mutating-requests-inflight=1', '--request-timeout=40s']);
});
t.teardown(() => s.stop());

const scrape = async (): Promise<Map<string, PromFamily>> => parsePrometheusText((await s.admin.get('/metrics')).text);
const family = (fams: Map<string, PromFamily>, name: string): PromFamily | undefined => fams.get(name) ?? fams.get(name.replace(/_total$/, ''));
/** A sample's value (0 when absent). */
const value = (fams: Map<string, PromFamily>, family: string, sample: string, labels: Record<string, string>): number =>
  fams.get(family)?.samples.find((m) => m.name === sample && Object.entries(labels).every(([k, v]) => m.labels[k] === v))?.value ?? 0;

t.test("every family of upstream v1.32's flowcontrol metrics.go: type, stability class, help and labels", async (t) => {
  t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps')).status, 200);
  t.equal((await s.admin.with({ token: BOB_TOKEN }).get('/api/v1/namespaces/default/configmaps')).status, 200);
  const fams = await scrape();
  const ours = [...fams.keys()].filter((n) => n.startsWith('apiserver_flowcontrol_'));
  const upstream = UPSTREAM.map(([n, type]) => (type === 'counter' ? n.replace(/_total$/, '') : n));
  t.same(ours.sort(), [...upstream].sort(), "the families exposed are upstream's, no more, no fewer");
  for (const [name, type, stability, help, labels] of UPSTREAM) {
    const f = family(fams, name);
    if (!t.ok(f, `${name} is exposed`)) continue;
    t.equal(f!.type, type, `${name}: ${type}`);
    t.equal(f!.help, `[${stability}] ${help}`, `${name}: help`);
    const sample = f!.samples.find((m) => !('le' in m.labels) || m.name.endsWith('_count'));
    if (sample) t.same(Object.keys(sample.labels).sort(), labels, `${name}: labels`);
  }
  const waits = fams.get('apiserver_flowcontrol_request_wait_duration_seconds')!.samples;
  t.ok(waits.some((m) => m.labels.priority_level === 'global-default' && m.labels.execute === 'true'), "a limited level's wait is observed (bob's LIST)");
  t.notOk(waits.some((m) => m.labels.priority_level === 'exempt'), 'the exempt level has no wait series, as upstream (its requests never wait)');
  t.notOk(waits.some((m) => m.labels.execute === 'false'), 'nor is there a series of refused waits before a refusal');
  t.ok(fams.get('apiserver_flowcontrol_dispatched_requests')!.samples.some((m) => m.labels.priority_level === 'exempt'), 'though its requests are dispatched');
});

t.test('under real requests: seats held, a request queued and dispatched move the timing-ratio histograms, the dispatch gauges and the demand figures', async (t) => {
  await tinyLevel(s, 'tiny-queue', 'bob', { type: 'Queue', queuing: { queues: 1, handSize: 1, queueLengthLimit: 5 } });
  const bob = s.admin.with({ token: BOB_TOKEN });
  const L = 'tiny-queue';
  const before = await scrape();
  const upload = await stalledUpload(s, BOB_TOKEN, 'held');
  t.teardown(() => upload.destroy());
  t.ok(await waitFor(async () => value(await scrape(), 'apiserver_flowcontrol_current_executing_seats', 'apiserver_flowcontrol_current_executing_seats', { priority_level: L }) === 1), 'the held upload takes the level\'s one seat');
  const waiting = bob.get('/api/v1/namespaces/default/configmaps');
  t.ok(await waitFor(async () => value(await scrape(), 'apiserver_flowcontrol_current_inqueue_requests', 'apiserver_flowcontrol_current_inqueue_requests', { priority_level: L }) === 1), 'a LIST waits in the queue');
  await new Promise((r) => setTimeout(r, 400));
  const during = await scrape();
  const grew = (family: string, labels: Record<string, string>): number => value(during, family, `${family}_sum`, labels) - value(before, family, `${family}_sum`, labels);
  // ratio x seconds: the waiting LIST is 1 of 5 queue places, the upload 1 of 1 seat, demand 2 seats of 1
  t.ok(grew('apiserver_flowcontrol_priority_level_request_utilization', { phase: 'waiting', priority_level: L }) >= 0.2 * 0.3, 'request utilization, waiting: one of five places for the 0.4 s it waited');
  t.ok(grew('apiserver_flowcontrol_priority_level_request_utilization', { phase: 'executing', priority_level: L }) >= 0.3, 'request utilization, executing: the one seat full');
  t.ok(grew('apiserver_flowcontrol_priority_level_seat_utilization', { phase: 'executing', priority_level: L }) >= 0.3, 'seat utilization: 1 the whole time');
  t.ok(grew('apiserver_flowcontrol_demand_seats', { priority_level: L }) >= 2 * 0.3, 'demand seats: 2 seats wanted of 1');
  t.ok(grew('apiserver_flowcontrol_read_vs_write_current_requests', { phase: 'waiting', request_kind: 'readOnly' }) > 0, 'read vs write: a read-only request waiting');
  t.ok(grew('apiserver_flowcontrol_read_vs_write_current_requests', { phase: 'executing', request_kind: 'mutating' }) > 0, 'read vs write: a mutating request executing');
  const full = value(during, 'apiserver_flowcontrol_priority_level_seat_utilization', 'apiserver_flowcontrol_priority_level_seat_utilization_bucket', { priority_level: L, le: '0.99' });
  const all = value(during, 'apiserver_flowcontrol_priority_level_seat_utilization', 'apiserver_flowcontrol_priority_level_seat_utilization_count', { priority_level: L });
  t.ok(all - full >= 0.3, 'the seconds at utilization 1 are counted in the bucket above 0.99');
  t.equal(value(during, 'apiserver_flowcontrol_request_concurrency_in_use', 'apiserver_flowcontrol_request_concurrency_in_use', { priority_level: L, flow_schema: L }), 1, 'deprecated request_concurrency_in_use: the seat in use');
  t.equal(value(during, 'apiserver_flowcontrol_request_concurrency_limit', 'apiserver_flowcontrol_request_concurrency_limit', { priority_level: L }), 1, 'deprecated request_concurrency_limit: the nominal seat');
  // upstream's endpoint gauges that priority and fairness feeds: the most executing and waiting since the last scrape
  t.ok(value(during, 'apiserver_current_inflight_requests', 'apiserver_current_inflight_requests', { request_kind: 'mutating' }) >= 1, 'apiserver_current_inflight_requests: the upload executing');
  t.ok(value(during, 'apiserver_current_inqueue_requests', 'apiserver_current_inqueue_requests', { request_kind: 'readOnly' }) >= 1, 'apiserver_current_inqueue_requests: the LIST waiting');
  t.equal(during.get('apiserver_current_inqueue_requests')?.help, '[ALPHA] Maximal number of queued requests in this apiserver per request kind in last second.');

  // a configuration change re-balances at once, reading the demand since the last re-balancing (the
  // seat in use and the one wanted are still there, whenever the periodic one last ran)
  t.equal((await s.admin.post(FS, { metadata: { name: 'another' }, spec: { priorityLevelConfiguration: { name: 'global-default' }, matchingPrecedence: 9000, rules: [] } })).status, 201);
  t.ok(
    await waitFor(async () => {
      return value(await scrape(), 'apiserver_flowcontrol_demand_seats_high_watermark', 'apiserver_flowcontrol_demand_seats_high_watermark', { priority_level: L }) >= 2;
    }),
    'demand_seats_high_watermark: the seat in use and the seat waiting',
  );

  // the seat comes back: the LIST is dispatched from the queue
  upload.destroy();
  t.equal((await waiting).status, 200, 'the queued LIST ran once the seat came back');
  const after = await scrape();
  const gauge = (name: string, labels: Record<string, string> = {}): number | undefined =>
    after.get(name)?.samples.find((m) => m.labels.priority_level === L && Object.entries(labels).every(([k, v]) => m.labels[k] === v))?.value;
  const r = gauge('apiserver_flowcontrol_dispatch_r');
  t.ok(r !== undefined && r > 0, `dispatch_r: R when the LIST was dispatched (${r})`);
  t.ok(gauge('apiserver_flowcontrol_latest_s') !== undefined, 'latest_s: its queue\'s virtual start');
  for (const g of ['apiserver_flowcontrol_next_s_bounds', 'apiserver_flowcontrol_next_discounted_s_bounds'])
    for (const bound of ['min', 'max']) t.ok(gauge(g, { bound }) !== undefined, `${g}{bound="${bound}"}`);
  t.ok((gauge('apiserver_flowcontrol_current_r') ?? 0) >= r!, 'current_r: at least the R of the last dispatch');
  t.equal(value(after, 'apiserver_flowcontrol_request_queue_length_after_enqueue', 'apiserver_flowcontrol_request_queue_length_after_enqueue_bucket', { priority_level: L, le: '10' }), 2, 'both requests saw the queue after joining it');

  const adjusted = await scrape();
  t.ok(value(adjusted, 'apiserver_flowcontrol_demand_seats_average', 'apiserver_flowcontrol_demand_seats_average', { priority_level: L }) > 0, 'demand_seats_average above zero');
  t.ok(value(adjusted, 'apiserver_flowcontrol_demand_seats_stdev', 'apiserver_flowcontrol_demand_seats_stdev', { priority_level: L }) >= 0, 'demand_seats_stdev');
  t.ok(value(adjusted, 'apiserver_flowcontrol_target_seats', 'apiserver_flowcontrol_target_seats', { priority_level: L }) >= 1, 'target_seats: at least its lower bound');
});

t.test("a queued request waits a quarter of its own deadline (?timeout=), as upstream's getRequestWaitContext, not the server's default", async (t) => {
  const bob = s.admin.with({ token: BOB_TOKEN });
  const upload = await stalledUpload(s, BOB_TOKEN, 'held-again');
  t.teardown(() => upload.destroy());
  t.ok(await waitFor(async () => value(await scrape(), 'apiserver_flowcontrol_current_executing_seats', 'apiserver_flowcontrol_current_executing_seats', { priority_level: 'tiny-queue' }) === 1), 'the seat is held');
  const t0 = performance.now();
  const r = await bob.get('/api/v1/namespaces/default/configmaps?timeout=2s');
  const waited = performance.now() - t0;
  t.equal(r.status, 429, 'refused when its wait is over');
  t.ok(waited >= 450 && waited < 5000, `after about 0.5 s (a quarter of 2 s), not the default 10 s (${Math.round(waited)} ms)`);
  upload.destroy();
});

t.test("a watch's initial stage is timed as type watch, other requests as regular (request_execution_seconds)", async (t) => {
  const bob = s.admin.with({ token: BOB_TOKEN });
  const w = await bob.stream('/api/v1/namespaces/default/configmaps?watch=true');
  t.equal(w.status, 200);
  w.close();
  const fams = await scrape();
  const count = (type: string): number => value(fams, 'apiserver_flowcontrol_request_execution_seconds', 'apiserver_flowcontrol_request_execution_seconds_count', { priority_level: 'tiny-queue', type });
  t.ok(await waitFor(async () => value(await scrape(), 'apiserver_flowcontrol_request_execution_seconds', 'apiserver_flowcontrol_request_execution_seconds_count', { priority_level: 'tiny-queue', type: 'watch' }) === 1), 'the watch: type watch');
  t.ok(count('regular') >= 1, 'the LISTs before it: type regular');
});
