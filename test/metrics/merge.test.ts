/**
 * One server's /metrics out of several acceptor processes: each acceptor's snapshot (plain data, sent
 * as JSON over the cluster channel) merged by the aggregator each family declares, and written by the
 * same writer as a single process's exposition.
 */
import t from 'tap';
import { ApiserverMetrics, exposeMerged, type MetricSources, type MetricsSnapshot } from '../../core/metrics/apiserver.js';
import { mergeFamilies } from '../../core/metrics/merge.js';
import { misspelledValues, parseOpenMetricsText, parsePrometheusText, type PromFamily, sampleValue } from '../helpers/prometheus.js';

const current = { major: 1, minor: 32 };

/** What one acceptor process has seen, fed to its own ApiserverMetrics. */
interface AcceptorFigures {
  /** apiserver_request_total and the duration histogram: [verb, resource, seconds] per request. */
  requests: [string, string, number][];
  storedObjects: [string, number][];
  inflight: { readOnly: number; mutating: number };
  longRunningWatches: number;
  auditEvents: number;
  /** The authentication config reloads every acceptor makes of the same file. */
  authnReloads: number;
  authnReloadAt: number;
}

function acceptor(f: AcceptorFigures): ApiserverMetrics {
  const sources: MetricSources = {
    storedObjects: () => f.storedObjects,
    inflight: () => f.inflight,
    authnConfigReloads: () => ({ lastTimestampSeconds: { success: f.authnReloadAt }, reloadsTotal: { success: f.authnReloads }, configHash: 'sha256:abc' }),
    audit: () => ({ events: f.auditEvents, errors: {}, levels: { Metadata: f.auditEvents }, requestsRejected: 0 }),
    apiserverIdHash: 'sha256:id',
  };
  const m = new ApiserverMetrics({ current, warn: () => {} }, sources);
  for (const [verb, resource, seconds] of f.requests) {
    m.requests.with(verb, 'false', '', 'v1', resource, '', 'namespace', 'apiserver', '200').inc();
    m.requestDuration.with(verb, 'false', '', 'v1', resource, '', 'namespace', 'apiserver').observe(seconds);
  }
  m.longRunning.with('WATCH', '', 'v1', 'pods', '', 'namespace', 'apiserver').set(f.longRunningWatches);
  m.deprecatedApis.with('extensions', 'v1beta1', 'ingresses', '', '1.22').set(1);
  m.attempt('success', 0.002);
  return m;
}

const A: AcceptorFigures = {
  requests: [
    ['GET', 'pods', 0.01],
    ['GET', 'pods', 0.3],
    ['LIST', 'configmaps', 2.5],
  ],
  storedObjects: [
    ['pods', 5],
    ['configmaps', 3],
  ],
  inflight: { readOnly: 2, mutating: 1 },
  longRunningWatches: 4,
  auditEvents: 3,
  authnReloads: 2,
  authnReloadAt: 1700000000,
};

// the second acceptor saw other requests (one resource A never served) and its cache is a step ahead
const B: AcceptorFigures = {
  requests: [
    ['GET', 'pods', 0.02],
    ['CREATE', 'secrets', 0.07],
  ],
  storedObjects: [
    ['pods', 6],
    ['configmaps', 3],
  ],
  inflight: { readOnly: 5, mutating: 0 },
  longRunningWatches: 1,
  auditEvents: 2,
  authnReloads: 2,
  authnReloadAt: 1700000005,
};

/** A snapshot as it arrives from another process: through JSON. */
const overTheWire = (s: MetricsSnapshot): MetricsSnapshot => JSON.parse(JSON.stringify(s)) as MetricsSnapshot;

/**
 * An exposition with the live process's figures blanked. The process collectors read the running
 * process, so two scrapes differ in those values and in the label sets of handles, resources and GC
 * kinds; every other byte must match.
 */
const withoutLiveFigures = (body: string): string =>
  body
    .split('\n')
    .filter((line) => !/^nodejs_(active_|gc_)/.test(line))
    .map((line) => (/^(process|nodejs)_/.test(line) ? line.replace(/ \S+$/, ' <live>') : line))
    .join('\n');

/** The part of an exposition before the process's families (all of it is deterministic). */
const serverPart = (body: string): string => body.slice(0, body.indexOf('# HELP process_'));

const parse = (body: string, openMetrics: boolean): Map<string, PromFamily> => (openMetrics ? parseOpenMetricsText(body) : parsePrometheusText(body));

for (const openMetrics of [false, true]) {
  const what = openMetrics ? 'OpenMetrics' : 'text';

  t.test(`${what}: one acceptor's snapshot is written exactly as expose() writes that acceptor's metrics`, async (t) => {
    const m = acceptor(A);
    // values each format spells its own way, and a label value that needs escaping
    m.deprecatedApis.with('x', 'v1', 'quoted "a"\nb\\c', '', '1.40').set(NaN);
    m.longRunning.with('WATCH', 'big', 'v1', 'r', '', 'cluster', 'apiserver').set(1e21);
    m.longRunning.with('WATCH', 'neg', 'v1', 'r', '', 'cluster', 'apiserver').set(-Infinity);
    const exposed = await m.expose(openMetrics);
    const merged = exposeMerged([overTheWire(await m.snapshot(openMetrics))], openMetrics);
    t.equal(merged.contentType, exposed.contentType);
    t.ok(serverPart(exposed.body).length > 0 && serverPart(exposed.body).includes('apiserver_request_duration_seconds_bucket'), 'the server part is populated');
    t.equal(serverPart(merged.body), serverPart(exposed.body), 'the server families byte for byte');
    t.equal(withoutLiveFigures(merged.body), withoutLiveFigures(exposed.body), 'the whole document, process figures aside');
    t.match(merged.body, openMetrics ? /\n# EOF\n$/ : /[^\n]\n$/, 'ends as expose() ends');
    t.same(misspelledValues(merged.body), []);
  });

  t.test(`${what}: two acceptors merge into one server's figures`, async (t) => {
    const [a, b] = [acceptor(A), acceptor(B)];
    const snapshots = [overTheWire(await a.snapshot(openMetrics)), overTheWire(await b.snapshot(openMetrics))];
    // the acceptors are processes started at different times (here both are this process)
    const start = (s: MetricsSnapshot, t: number): void => {
      s.process.find((f) => f.name === 'process_start_time_seconds')!.values[0]!.value = t;
    };
    start(snapshots[0]!, 1700000100);
    start(snapshots[1]!, 1700000050);
    const { body } = exposeMerged(snapshots, openMetrics);
    t.same(misspelledValues(body), []);
    const fams = parse(body, openMetrics);
    const req = (verb: string, resource: string) => ({ verb, resource, dry_run: 'false', version: 'v1', scope: 'namespace', component: 'apiserver' });
    const cases: [sample: string, labels: Record<string, string>, want: number, why: string][] = [
      ['apiserver_request_total', { ...req('GET', 'pods'), code: '200' }, 3, 'counters sum'],
      ['apiserver_request_total', { ...req('LIST', 'configmaps'), code: '200' }, 1, 'a series only the first acceptor has'],
      ['apiserver_request_total', { ...req('CREATE', 'secrets'), code: '200' }, 1, 'a series only the second acceptor has'],
      ['apiserver_request_duration_seconds_bucket', { ...req('GET', 'pods'), le: '0.025' }, 2, 'histogram buckets sum'],
      ['apiserver_request_duration_seconds_bucket', { ...req('GET', 'pods'), le: '0.4' }, 3, 'histogram buckets sum (cumulative)'],
      ['apiserver_request_duration_seconds_bucket', { ...req('GET', 'pods'), le: '+Inf' }, 3, 'the +Inf bucket'],
      ['apiserver_request_duration_seconds_count', req('GET', 'pods'), 3, 'histogram counts sum'],
      ['apiserver_request_duration_seconds_sum', req('GET', 'pods'), 0.01 + 0.3 + 0.02, 'histogram sums sum'],
      ['apiserver_request_duration_seconds_count', req('CREATE', 'secrets'), 1, "the second acceptor's own series"],
      // the text parser names a counter's samples with _total even when the exposition does not
      [openMetrics ? 'authentication_attempts' : 'authentication_attempts_total', { result: 'success' }, 2, 'a counter without _total'],
      ['apiserver_audit_event_total', {}, 5, 'a counter filled at scrape time'],
      ['apiserver_storage_objects', { resource: 'pods' }, 6, 'stored objects: the max (every cache holds the same objects), not the sum'],
      ['apiserver_storage_objects', { resource: 'configmaps' }, 3, 'stored objects not doubled'],
      ['apiserver_current_inflight_requests', { request_kind: 'readOnly' }, 7, 'in-flight requests sum'],
      ['apiserver_current_inflight_requests', { request_kind: 'mutating' }, 1, 'in-flight requests sum'],
      ['apiserver_longrunning_requests', { verb: 'WATCH', resource: 'pods' }, 5, 'long-running requests sum'],
      ['apiserver_requested_deprecated_apis', { group: 'extensions', removed_release: '1.22' }, 1, 'a requested deprecated API is 1, however many acceptors served it'],
      ['apiserver_authentication_config_controller_automatic_reloads_total', { status: 'success' }, 2, 'reloads every acceptor makes of one file: counted once'],
      ['apiserver_authentication_config_controller_automatic_reload_last_timestamp_seconds', { status: 'success' }, 1700000005, 'the latest reload'],
      ['apiserver_authentication_config_controller_last_config_info', { hash: 'sha256:abc' }, 1, 'an info gauge stays 1'],
      ['process_start_time_seconds', {}, 1700000050, 'the server started when its first process did'],
    ];
    for (const [sample, labels, want, why] of cases) {
      const got = sampleValue(fams, sample, labels);
      if (sample.endsWith('_sum')) t.ok(Math.abs(got - want) < 1e-12, `${sample} ${JSON.stringify(labels)}: ${why} (${got})`);
      else t.equal(got, want, `${sample} ${JSON.stringify(labels)}: ${why}`);
    }
    // a series only the second acceptor has is written whole, after the first acceptor's
    const series = (fams.get('apiserver_request_duration_seconds')?.samples ?? []).map((s) => `${s.labels.verb} ${s.name}`);
    t.same([...new Set(series)], ['GET apiserver_request_duration_seconds_bucket', 'GET apiserver_request_duration_seconds_sum', 'GET apiserver_request_duration_seconds_count', 'LIST apiserver_request_duration_seconds_bucket', 'LIST apiserver_request_duration_seconds_sum', 'LIST apiserver_request_duration_seconds_count', 'CREATE apiserver_request_duration_seconds_bucket', 'CREATE apiserver_request_duration_seconds_sum', 'CREATE apiserver_request_duration_seconds_count']);
    // the families in the order one acceptor writes them, HELP with its stability class
    const oneAcceptor = parse((await a.expose(openMetrics)).body, openMetrics);
    t.same([...fams.keys()], [...oneAcceptor.keys()], 'the same families in the same order');
    t.equal(fams.get('apiserver_storage_objects')!.help, '[STABLE] Number of stored objects at the time of last check split by kind.');
  });
}

t.test('each gauge family merges by the aggregator chosen for it', async (t) => {
  const s = await acceptor(A).snapshot(false);
  const byName = new Map([...s.server, ...s.process].map((f) => [f.name, f]));
  const cases: [family: string, aggregator: string][] = [
    ['apiserver_current_inflight_requests', 'sum'],
    ['apiserver_longrunning_requests', 'sum'],
    ['apiserver_storage_objects', 'max'],
    ['apiserver_requested_deprecated_apis', 'max'],
    ['apiserver_authentication_config_controller_automatic_reload_last_timestamp_seconds', 'max'],
    ['apiserver_authorization_config_controller_automatic_reload_last_timestamp_seconds', 'max'],
    ['apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds', 'max'],
    ['apiserver_authentication_config_controller_last_config_info', 'max'],
    ['apiserver_authorization_config_controller_last_config_info', 'max'],
    ['apiserver_encryption_config_controller_last_config_info', 'max'],
    ['apiserver_authentication_config_controller_automatic_reloads_total', 'max'],
    ['process_start_time_seconds', 'min'],
    ['process_resident_memory_bytes', 'sum'],
    ['process_cpu_seconds_total', 'sum'],
    ['nodejs_version_info', 'first'],
  ];
  for (const [family, aggregator] of cases) t.equal(byName.get(family)?.aggregator, aggregator, family);
  const serverGauges = s.server.filter((f) => f.type === 'gauge').map((f) => f.name);
  t.same(serverGauges.filter((n) => !cases.some(([c]) => c === n)), [], 'every server gauge is in the table');
  for (const f of s.server) if (f.type !== 'gauge' && !/_config_controller_automatic_reloads_total$/.test(f.name)) t.equal(f.aggregator, 'sum', `${f.name}: ${f.type}s sum`);
});

t.test('a snapshot is plain data: NaN and the infinities cross JSON and come back as themselves', async (t) => {
  const m = acceptor(A);
  const g = m.registry.gauge({ name: 'test_special_values', help: 'special', stability: 'ALPHA', labelNames: ['case'], aggregator: 'max' });
  g.with('nan').set(NaN);
  g.with('pos').set(Infinity);
  g.with('neg').set(-Infinity);
  const s = await m.snapshot(false);
  const wire = overTheWire(s);
  t.same(wire, s, 'JSON.parse(JSON.stringify(snapshot)) is the snapshot');
  const family = wire.server.find((f) => f.name === 'test_special_values')!;
  t.same(
    family.values.map((v) => v.value),
    ['NaN', '+Inf', '-Inf'],
  );
  const { body } = exposeMerged([wire, overTheWire(s)], false);
  t.match(body, /^test_special_values\{case="nan"\} NaN$/m);
  t.match(body, /^test_special_values\{case="pos"\} \+Inf$/m);
  t.match(body, /^test_special_values\{case="neg"\} -Inf$/m);
});

t.test('merging: the first acceptor lists the order, a family whose aggregator is omit is left out', async (t) => {
  const fam = (name: string, aggregator: 'sum' | 'omit', value: number) => ({ name, help: name, type: 'gauge', aggregator, values: [{ labels: {}, value }] });
  const merged = mergeFamilies([
    [fam('b', 'sum', 1), fam('a', 'sum', 2), fam('gone', 'omit', 3)],
    [fam('a', 'sum', 4), fam('c', 'sum', 5), fam('gone', 'omit', 6)],
  ]);
  t.same(
    merged.map((f) => [f.name, f.values!.map((v) => v.value)]),
    [
      ['b', [1]],
      ['a', [6]],
      ['c', [5]],
    ],
  );
  t.throws(() => exposeMerged([], false), /at least one snapshot/);
});
