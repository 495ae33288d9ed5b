/**
 * /metrics as scrapers read it: every value spelled as the Prometheus text format and OpenMetrics
 * spell values (also runtime gauges that have no samples yet, and gauges set to NaN or infinities),
 * both formats from the same samples whatever was scraped before, and every histogram with upstream
 * v1.32's bucket bounds. Parsed by the Prometheus project's own Python parsers, text and OpenMetrics.
 */
import t from 'tap';
import { misspelledValues, parseOpenMetricsText, parsePrometheusText, type PromFamily } from '../helpers/prometheus.js';
import { ALICE_TOKEN, startServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { createServer } from 'node:https';
import type { Test } from 'tap';
import { sharedLoopbackPki } from '../helpers/pki.js';
import { WebhookClient } from '../../core/webhook/client.js';
import { AdmissionWebhookServer, webhookEntry } from '../helpers/admission-webhook.js';

/** One POST through the server's webhook client to a TLS server on loopback (the server runs in this process). */
async function webhookCall(t: Test): Promise<void> {
  const { ca, serving } = sharedLoopbackPki();
  const remote = createServer({ cert: serving.cert, key: serving.key }, (_req, res) => res.end('{}'));
  await new Promise<void>((r) => remote.listen(0, '127.0.0.1', r));
  const client = new WebhookClient({ url: new URL(`https://127.0.0.1:${(remote.address() as { port: number }).port}/`), ca: ca.cert });
  t.teardown(() => {
    client.close();
    remote.close();
  });
  await client.post({}, 5000);
}

/** A ConfigMap create passing a validating webhook (on loopback) and a ValidatingAdmissionPolicy that warns. */
async function admittedWrite(t: Test): Promise<void> {
  const hook = await AdmissionWebhookServer.start();
  t.teardown(() => hook.stop());
  const vwc = '/apis/admissionregistration.svc.io/v1/validatingwebhookconfigurations';
  const vap = '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicies';
  const vapb = '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicybindings';
  t.equal((await s.admin.post(vwc, { metadata: { name: 'metrics' }, webhooks: [webhookEntry('metrics.example.com', hook.url('/allow'))] })).status, 201);
  const rules = [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }];
  t.equal((await s.admin.post(vap, { metadata: { name: 'metrics' }, spec: { matchConstraints: { resourceRules: rules }, validations: [{ expression: 'false' }] } })).status, 201);
  // Warn: the write goes through; upstream counts a check only when it fails or errs
  t.equal((await s.admin.post(vapb, { metadata: { name: 'metrics' }, spec: { policyName: 'metrics', validationActions: ['Warn'] } })).status, 201);
  t.ok(
    await waitFor(async () => {
      await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { generateName: 'admitted-' } });
      return /^apiserver_validating_admission_policy_check_duration_seconds_bucket\{/m.test(await scrapeText(false)) && hook.on('/allow').length > 0;
    }),
    'a write was admitted by both',
  );
}

const OPENMETRICS = 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5';

let s: TestServer;
t.before(async () => {
  s = await startServer();
});
t.teardown(() => s.stop());

async function scrapeText(openMetrics: boolean): Promise<string> {
  const r = await s.admin.get('/metrics', openMetrics ? { accept: OPENMETRICS } : {});
  if (r.status !== 200) throw new Error(`scrape: ${r.status} ${r.text}`);
  if (openMetrics !== /^application\/openmetrics-text/.test(String(r.headers['content-type']))) throw new Error(`scrape answered ${String(r.headers['content-type'])}`);
  return r.text;
}

const parse = (text: string, openMetrics: boolean): Map<string, PromFamily> => (openMetrics ? parseOpenMetricsText(text) : parsePrometheusText(text));

// first in the file: the process's runtime gauges (nodejs_eventloop_lag_*) are made at the first
// scrape and have no event-loop samples yet, so their mean and deviation are not a number
t.test('a scrape right after start: every value is spelled as both formats spell it, and both parsers read it', async (t) => {
  for (const openMetrics of [false, true]) {
    const what = openMetrics ? 'OpenMetrics' : 'text';
    const text = await scrapeText(openMetrics);
    t.same(misspelledValues(text), [], `${what}: no value spelled otherwise than NaN, +Inf, -Inf or a decimal number`);
    const fams = parse(text, openMetrics);
    const lag = fams.get('nodejs_eventloop_lag_mean_seconds');
    if (t.ok(lag, `${what}: the event-loop lag mean is exposed`)) t.equal(lag!.samples.length, 1);
  }
});

t.test('a gauge set to NaN, +Inf or -Inf is written NaN, +Inf, -Inf in the text format and in OpenMetrics', async (t) => {
  const g = s.server.metrics.registry.gauge({ name: 'test_forced_value', help: 'A gauge the test sets.', stability: 'ALPHA', labelNames: ['case'], aggregator: 'sum' });
  g.with('nan').set(NaN);
  g.with('pos').set(Infinity);
  g.with('neg').set(-Infinity);
  g.with('tiny').set(1e-7);
  g.with('huge').set(1e21);
  for (const openMetrics of [false, true]) {
    const what = openMetrics ? 'OpenMetrics' : 'text';
    const text = await scrapeText(openMetrics);
    t.same(misspelledValues(text), [], `${what}: every value well spelled`);
    t.match(text, /^test_forced_value\{case="nan"\} NaN$/m, `${what}: NaN`);
    t.match(text, /^test_forced_value\{case="pos"\} \+Inf$/m, `${what}: +Inf`);
    t.match(text, /^test_forced_value\{case="neg"\} -Inf$/m, `${what}: -Inf`);
    const fam = parse(text, openMetrics).get('test_forced_value');
    if (!t.ok(fam, `${what}: parsed`)) continue;
    const value = (c: string): number | undefined => fam!.samples.find((m) => m.labels.case === c)?.value;
    t.ok(Number.isNaN(value('nan')), `${what}: read back as NaN`);
    t.equal(value('pos'), Infinity);
    t.equal(value('neg'), -Infinity);
    t.equal(value('tiny'), 1e-7);
    t.equal(value('huge'), 1e21);
  }
});

t.test('an OpenMetrics scrape leaves the text format as it was: counters keep the names they are declared with', async (t) => {
  await s.admin.get('/api/v1/namespaces/default/configmaps');
  const before = await scrapeText(false);
  t.match(before, /^apiserver_request_total\{/m);
  const om = await scrapeText(true);
  t.match(om, /^# TYPE apiserver_request counter$/m, 'OpenMetrics: the family without _total');
  t.match(om, /^apiserver_request_total\{/m, 'OpenMetrics: the samples with it');
  parseOpenMetricsText(om);
  const after = await scrapeText(false);
  t.match(after, /^# TYPE apiserver_request_total counter$/m, 'text: the family as declared');
  t.match(after, /^apiserver_request_total\{/m, 'text: the samples as declared');
  t.notMatch(after, /^apiserver_request\{/m);
  t.match(after, /^authentication_attempts\{result="success"\} \d+$/m, 'text: a counter declared without _total, as upstream writes it');
});

/**
 * Every histogram the server exposes, with upstream v1.32's bucket upper bounds (k8s.io/apiserver
 * v0.32, the library of kube-apiserver v1.32; ExponentialBuckets(start, factor, n) is start * factor^i
 * for i < n). The +Inf bucket follows each list. The one runtime histogram has no upstream counterpart.
 */
const exponential = (start: number, factor: number, n: number): number[] => Array.from({ length: n }, (_, i) => start * factor ** i);
const REQUEST_LATENCY = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];
const UPSTREAM_HISTOGRAMS: [name: string, bounds: number[], where: string][] = [
  ['apiserver_request_duration_seconds', REQUEST_LATENCY, 'pkg/endpoints/metrics/metrics.go requestLatencies: the list above'],
  ['apiserver_response_sizes', exponential(1000, 10, 7), 'pkg/endpoints/metrics/metrics.go responseSizes: ExponentialBuckets(1000, 10.0, 7), 1 KB to 1 GB'],
  ['apiserver_watch_events_sizes', exponential(1024, 2, 8), 'pkg/endpoints/metrics/metrics.go WatchEventsSizes: ExponentialBuckets(1024, 2.0, 8), 1 KiB to 128 KiB'],
  ['apiserver_storage_request_duration_seconds', REQUEST_LATENCY, 'pkg/storage/etcd3/metrics/metrics.go etcd_request_duration_seconds (our name for it): the request latency list'],
  ['authentication_duration_seconds', exponential(0.001, 2, 15), 'pkg/endpoints/filters/metrics.go authenticationLatency: ExponentialBuckets(0.001, 2, 15)'],
  ['rest_client_request_duration_seconds', [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60], 'component-base/metrics/prometheus/restclient requestLatency: its own list'],
  ['apiserver_admission_step_admission_duration_seconds', [0.005, 0.025, 0.1, 0.5, 1, 2.5], 'pkg/admission/metrics/metrics.go step latency: its own list'],
  ['apiserver_admission_controller_admission_duration_seconds', [0.005, 0.025, 0.1, 0.5, 1, 2.5], 'pkg/admission/metrics/metrics.go controller latency: the same list'],
  ['apiserver_admission_webhook_admission_duration_seconds', [0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 25], 'pkg/admission/metrics/metrics.go webhook latency: its own list'],
  ['apiserver_validating_admission_policy_check_duration_seconds', [0.0000005, 0.001, 0.01, 0.1, 1], 'plugin/policy/validating/metrics validation latency: its own list'],
  // pkg/util/flowcontrol/metrics/metrics.go: every request passes API Priority and Fairness
  ['apiserver_flowcontrol_request_wait_duration_seconds', [0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30], 'flowcontrol metrics.go requestWaitDuration: its own list'],
  ['apiserver_flowcontrol_request_execution_seconds', [0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30], 'flowcontrol metrics.go apiserverRequestExecutionTime: the same list'],
  ['apiserver_flowcontrol_work_estimated_seats', [1, 2, 4, 10], 'flowcontrol metrics.go apiserverWorkEstimatedSeats: its own list'],
  ['apiserver_flowcontrol_request_queue_length_after_enqueue', [0, 10, 25, 50, 100, 250, 500, 1000], 'flowcontrol metrics.go apiserverRequestQueueLength: queueLengthBuckets'],
  ['apiserver_flowcontrol_watch_count_samples', [0, 1, 10, 100, 1000, 10000], 'flowcontrol metrics.go watchCountSamples: its own list'],
  // timing-ratio histograms: buckets count the seconds a ratio spent in them
  ['apiserver_flowcontrol_priority_level_seat_utilization', [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1], 'flowcontrol metrics.go PriorityLevelExecutionSeatsGaugeVec: its own list'],
  ['apiserver_flowcontrol_priority_level_request_utilization', [0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.25, 0.5, 0.75, 1], 'flowcontrol metrics.go PriorityLevelConcurrencyGaugeVec: its own list'],
  ['apiserver_flowcontrol_read_vs_write_current_requests', [0, 0.001, 0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1], 'flowcontrol metrics.go readWriteConcurrencyGaugeVec: its own list'],
  ['apiserver_flowcontrol_demand_seats', [0.2, 0.4, 0.6, 0.8, 1, 1.2, 1.4, 1.7, 2, 2.8, 4, 6], 'flowcontrol metrics.go ApiserverSeatDemands: its own list'],
  // upstream's Go runtime times collections in go_gc_duration_seconds, a summary: no buckets to follow
  ['nodejs_gc_duration_seconds', [0.001, 0.01, 0.1, 1, 2, 5], "prom-client's runtime histogram, its own buckets; no upstream counterpart"],
];

t.test("every histogram has upstream v1.32's bucket bounds, in both formats", async (t) => {
  // a sample in each: a read, a write (the store's timing), a watch event, and the requests' authentication
  t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps')).status, 200);
  const w = await s.admin.stream('/api/v1/namespaces/default/configmaps?watch=true');
  t.equal((await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'buckets' } })).status, 201);
  for (let e = await w.next(); e; e = await w.next()) if (e.type === 'ADDED' && e.object.metadata.name === 'buckets') break;
  w.close();
  // a request of an ordinary user passes a limited priority level's queue (an exempt one never waits)
  await s.admin.with({ token: ALICE_TOKEN }).get('/version');
  // a call of a webhook (the one client of core/webhook, to a loopback server)
  await webhookCall(t);
  // a create admitted by a validating webhook and a policy (admission's step, plugin, webhook and policy histograms)
  await admittedWrite(t);
  // and a garbage collection seen by the runtime histogram (the server runs in this process)
  const gcSeen = async (): Promise<boolean> => /^nodejs_gc_duration_seconds_bucket\{/m.test(await scrapeText(false));
  t.ok(
    await waitFor(async () => {
      if (await gcSeen()) return true;
      // young objects enough for a scavenge
      return Array.from({ length: 200_000 }, (_, i) => ({ i })).length === 0;
    }),
    'a collection was timed',
  );
  for (const openMetrics of [false, true]) {
    const what = openMetrics ? 'OpenMetrics' : 'text';
    const fams = parse(await scrapeText(openMetrics), openMetrics);
    const histograms = [...fams.values()].filter((f) => f.type === 'histogram').map((f) => f.name);
    t.same(histograms.sort(), UPSTREAM_HISTOGRAMS.map(([name]) => name).sort(), `${what}: the histograms exposed are those of the table`);
    for (const [name, bounds, where] of UPSTREAM_HISTOGRAMS) {
      const fam = fams.get(name);
      if (!t.ok(fam, `${what}: ${name} is exposed`)) continue;
      const first = fam!.samples.find((m) => m.name === `${name}_bucket`);
      if (!t.ok(first, `${what}: ${name} has samples`)) continue;
      // the bounds of one series (the labels other than le of the first bucket sample)
      const series = Object.entries(first!.labels).filter(([k]) => k !== 'le');
      const les = fam!.samples.filter((m) => m.name === `${name}_bucket` && series.every(([k, v]) => m.labels[k] === v)).map((m) => m.labels.le!);
      t.same(les.map((le) => (le === '+Inf' ? Infinity : Number(le))), [...bounds, Infinity], `${what}: ${name} as upstream (${where})`);
      t.equal(les[les.length - 1], '+Inf', `${what}: ${name} ends with +Inf`);
    }
  }
});

/**
 * The `le` of two upstream histograms as upstream's encoders spell them (prometheus/common expfmt):
 * the text format's writeFloat is Go's FormatFloat(b, 'g', -1, 64), exponent form from 1e6 on;
 * OpenMetrics' writeOpenMetricsFloat adds `.0` to a spelling with neither point nor exponent.
 * Prometheus keeps a label's text, so another spelling would be another series.
 */
const LE_SPELLINGS: [name: string, text: string[], openMetrics: string[]][] = [
  [
    'apiserver_response_sizes',
    ['1000', '10000', '100000', '1e+06', '1e+07', '1e+08', '1e+09', '+Inf'],
    ['1000.0', '10000.0', '100000.0', '1e+06', '1e+07', '1e+08', '1e+09', '+Inf'],
  ],
  [
    'apiserver_request_duration_seconds',
    ['0.005', '0.025', '0.05', '0.1', '0.2', '0.4', '0.6', '0.8', '1', '1.25', '1.5', '2', '3', '4', '5', '6', '8', '10', '15', '20', '30', '45', '60', '+Inf'],
    ['0.005', '0.025', '0.05', '0.1', '0.2', '0.4', '0.6', '0.8', '1.0', '1.25', '1.5', '2.0', '3.0', '4.0', '5.0', '6.0', '8.0', '10.0', '15.0', '20.0', '30.0', '45.0', '60.0', '+Inf'],
  ],
];

t.test('a scrape spells each bucket bound as upstream does: 1e+06 in the text format, 1.0 and 1000.0 in OpenMetrics', async (t) => {
  t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps?le=spellings')).status, 200);
  for (const openMetrics of [false, true]) {
    const what = openMetrics ? 'OpenMetrics' : 'text';
    const text = await scrapeText(openMetrics);
    for (const [name, textLe, omLe] of LE_SPELLINGS) {
      // the raw lines of one series: the LIST of configmaps by this test's client
      const series = text.split('\n').filter((l) => l.startsWith(`${name}_bucket{`) && l.includes('resource="configmaps"') && l.includes('scope="namespace"') && l.includes('verb="LIST"'));
      t.same(
        series.map((l) => /,le="([^"]*)"\}/.exec(l)?.[1]),
        openMetrics ? omLe : textLe,
        `${what}: ${name}`,
      );
      // bucket counts: floats in the text format (writeFloat), integers in OpenMetrics (writeUint)
      t.same(series.filter((l) => !/\} \d+$/.test(l)), [], `${what}: ${name}'s counts are whole numbers without a point`);
    }
    t.match(text, openMetrics ? /^apiserver_request_total\{.*\} \d+\.0$/m : /^apiserver_request_total\{.*\} \d+$/m, `${what}: a counter's value as the encoder writes a float`);
  }
});
