import t from 'tap';
import { parsePrometheusText, sampleValue } from '../helpers/prometheus.js';
import { goFloat } from '../../core/api/go-format.js';
import { exponentialBuckets, familyText, helpText, openMetricsFloat, showHiddenMetricsFor, StabilityRegistry, textFloat, TimingHistogramMetric, visibilityOf, wantsOpenMetrics } from '../../core/metrics/registry.js';
import { parseOpenMetricsText } from '../helpers/prometheus.js';

const current = { major: 1, minor: 32 };


t.test('help text carries the stability class, and a deprecated metric the (Deprecated from x.y) prefix', async (t) => {
  const cases: [Parameters<typeof helpText>[0], string][] = [
    [{ name: 'a', help: 'Alpha one.', stability: 'ALPHA' }, '[ALPHA] Alpha one.'],
    [{ name: 'b', help: 'Beta one.', stability: 'BETA' }, '[BETA] Beta one.'],
    [{ name: 'c', help: 'Stable one.', stability: 'STABLE' }, '[STABLE] Stable one.'],
    [{ name: 'd', help: 'Old one.', stability: 'STABLE', deprecatedVersion: '1.31.0' }, '[STABLE] (Deprecated from 1.31) Old one.'],
    [{ name: 'e', help: 'Older.', stability: 'ALPHA', deprecatedVersion: '1.30' }, '[ALPHA] (Deprecated from 1.30) Older.'],
  ];
  for (const [o, want] of cases) t.equal(helpText(o), want, o.name);
});

t.test('a metric deprecated three minors before the current release is hidden; earlier ones are removed', async (t) => {
  const cases: [string | undefined, string][] = [
    [undefined, 'shown'],
    ['1.32', 'shown'],
    ['1.31', 'shown'],
    ['1.30', 'shown'],
    ['1.29', 'hidden'],
    ['1.28', 'removed'],
    ['0.99', 'removed'],
  ];
  for (const [v, want] of cases) t.equal(visibilityOf(v, current), want, String(v));
});

t.test('--show-hidden-metrics-for-version accepts only the previous minor release', async (t) => {
  t.equal(showHiddenMetricsFor('', current), false);
  t.equal(showHiddenMetricsFor('1.31', current), true);
  t.equal(showHiddenMetricsFor('1.31.0', current), true);
  for (const bad of ['1.30', '1.32', '2.31', 'x', '1']) {
    t.throws(() => showHiddenMetricsFor(bad, current), /must be omitted or have the value '1.31'/, bad);
  }
  t.throws(() => showHiddenMetricsFor('1.30', current), /must be omitted or have the value '1.31'/);
});

/** A registry with one metric of every class and deprecation age, as the endpoint prints it. */
function testRegistry(showHidden: boolean, warnings: string[]): StabilityRegistry {
  const r = new StabilityRegistry({ showHidden, current, warn: (m) => warnings.push(m) });
  r.counter({ name: 'test_alpha_total', help: 'alpha', stability: 'ALPHA' }).inc();
  r.counter({ name: 'test_beta_total', help: 'beta', stability: 'BETA' }).inc(2);
  r.gauge({ name: 'test_stable', help: 'stable', stability: 'STABLE', aggregator: 'sum' }).set(3);
  r.counter({ name: 'test_deprecated_total', help: 'deprecated', stability: 'STABLE', deprecatedVersion: '1.31' }).inc();
  r.counter({ name: 'test_hidden_total', help: 'hidden', stability: 'STABLE', deprecatedVersion: '1.29' }).inc();
  r.counter({ name: 'test_removed_total', help: 'removed', stability: 'ALPHA', deprecatedVersion: '1.27' }).inc();
  return r;
}

t.test('the endpoint prints shown metrics with their HELP prefixes and leaves hidden ones out', async (t) => {
  const warnings: string[] = [];
  const r = testRegistry(false, warnings);
  const byName = parsePrometheusText((await r.expose(false)).body);
  t.same([...byName.keys()].sort(), ['test_alpha', 'test_beta', 'test_deprecated', 'test_stable']);
  t.equal(byName.get('test_alpha')!.help, '[ALPHA] alpha');
  t.equal(byName.get('test_beta')!.help, '[BETA] beta');
  t.equal(byName.get('test_stable')!.help, '[STABLE] stable');
  t.equal(byName.get('test_stable')!.type, 'gauge');
  t.equal(byName.get('test_deprecated')!.help, '[STABLE] (Deprecated from 1.31) deprecated');
  t.equal(sampleValue(byName, 'test_beta_total'), 2);
  t.same([...r.hidden].sort(), ['test_hidden_total', 'test_removed_total']);
  // every deprecated metric warns when registered
  t.equal(warnings.length, 3);
  t.match(warnings.join('\n'), /test_deprecated_total is deprecated since 1\.31/);
});

t.test('--show-hidden-metrics-for-version brings back metrics hidden in this release, not removed ones', async (t) => {
  const r = testRegistry(true, []);
  const fams = parsePrometheusText((await r.expose(false)).body);
  t.ok(fams.has('test_hidden'));
  t.notOk(fams.has('test_removed'));
  t.equal(fams.get('test_hidden')!.help, '[STABLE] (Deprecated from 1.29) hidden');
});

t.test('label values with quotes, backslashes and newlines are escaped as the text format requires', async (t) => {
  const r = new StabilityRegistry({ current });
  const c = r.counter({ name: 'test_labels_total', help: 'labels', stability: 'ALPHA', labelNames: ['v'] });
  const nasty = 'a "quoted"\nline \\ end';
  c.with(nasty).inc();
  c.with(nasty).inc();
  const text = (await r.expose(false)).body;
  t.match(text, /test_labels_total\{v="a \\"quoted\\"\\nline \\\\ end"\} 2/);
  const fam = parsePrometheusText(text).get('test_labels')!;
  t.equal(fam.samples[0]!.labels.v, nasty);
  t.equal(fam.samples[0]!.value, 2);
});

t.test('OpenMetrics is chosen from Accept as Prometheus sends it', async (t) => {
  t.equal(wantsOpenMetrics('application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'), true);
  t.equal(wantsOpenMetrics('text/plain;version=0.0.4;q=1,application/openmetrics-text;q=0.5'), false);
  t.equal(wantsOpenMetrics(undefined), false);
  const r = new StabilityRegistry({ current });
  r.counter({ name: 'test_om_total', help: 'om', stability: 'BETA' }).inc();
  const om = await r.expose(true);
  t.match(om.contentType, /^application\/openmetrics-text; version=1\.0\.0/);
  t.match(om.body, /# HELP test_om \[BETA\] om\n# TYPE test_om counter\ntest_om_total 1\.0\n# EOF\n?$/);
});

t.test("goFloat writes Go's strconv.FormatFloat(v, 'g', -1, 64) of Go's own table (strconv's ftoa_test.go)", async (t) => {
  const cases: [number, string][] = [
    [1, '1'],
    [20, '20'],
    [1234567.8, '1.2345678e+06'],
    [200000, '200000'],
    [2000000, '2e+06'],
    [1e10, '1e+10'],
    [0, '0'],
    [-1, '-1'],
    [12, '12'],
    [123456700, '1.234567e+08'],
    [1e23, '1e+23'],
    [99999999999999974834176, '9.999999999999997e+22'],
    [100000000000000008388608, '1.0000000000000001e+23'],
    [5e-324, '5e-324'],
    [-5e-324, '-5e-324'],
    [32, '32'],
    [2.2250738585072012e-308, '2.2250738585072014e-308'],
    [2.2250738585072011e-308, '2.225073858507201e-308'],
    [383260575764816448, '3.8326057576481645e+17'],
    // the edges of the plain form: exponent -4 to 5
    [0.0001, '0.0001'],
    [0.00001, '1e-05'],
    [999999, '999999'],
    [999999.5, '999999.5'],
    [1e6, '1e+06'],
    [-1e6, '-1e+06'],
    [1.5e300, '1.5e+300'],
  ];
  for (const [v, want] of cases) t.equal(goFloat(v), want, `${v} is ${want}`);
});

/**
 * Bucket bounds and what each of upstream's encoders writes for them in `le` (prometheus/common
 * expfmt: writeFloat in the text format, writeOpenMetricsFloat in OpenMetrics: 1, 0 and -1 as
 * `1.0`, `0.0`, `-1.0`, and `.0` after any other spelling without a point or exponent).
 */
const BOUND_SPELLINGS: [bound: number, text: string, openMetrics: string][] = [
  [0.005, '0.005', '0.005'],
  [0.025, '0.025', '0.025'],
  [0.1, '0.1', '0.1'],
  [1, '1', '1.0'],
  [1.25, '1.25', '1.25'],
  [2, '2', '2.0'],
  [60, '60', '60.0'],
  [0, '0', '0.0'],
  [-1, '-1', '-1.0'],
  [1000, '1000', '1000.0'],
  [100000, '100000', '100000.0'],
  [1e6, '1e+06', '1e+06'],
  [1e9, '1e+09', '1e+09'],
  [1024, '1024', '1024.0'],
  [131072, '131072', '131072.0'],
  [0.001 * 2 ** 14, '16.384', '16.384'],
  [0.00001, '1e-05', '1e-05'],
  [Infinity, '+Inf', '+Inf'],
  [-Infinity, '-Inf', '-Inf'],
  [NaN, 'NaN', 'NaN'],
];

t.test('a bound (or quantile) is spelled as upstream spells it, in the text format and in OpenMetrics', async (t) => {
  for (const [bound, text, om] of BOUND_SPELLINGS) {
    t.equal(textFloat(bound), text, `text: ${bound} is ${text}`);
    t.equal(openMetricsFloat(bound), om, `OpenMetrics: ${bound} is ${om}`);
  }
  const le = (body: string): string[] => [...body.matchAll(/^test_bounds_bucket\{le="([^"]*)"\}/gm)].map((m) => m[1]!);
  const r = new StabilityRegistry({ current });
  const finite = BOUND_SPELLINGS.filter(([b]) => Number.isFinite(b)).sort((a, b) => a[0] - b[0]);
  r.histogram({ name: 'test_bounds', help: 'bounds', stability: 'ALPHA', buckets: finite.map(([b]) => b) }).observe(3);
  t.same(le((await r.expose(false)).body), [...finite.map(([, s]) => s), '+Inf'], 'text: each bucket line');
  t.same(le((await r.expose(true)).body), [...finite.map(([, , s]) => s), '+Inf'], 'OpenMetrics: each bucket line');
  // the quantile label of a summary, and a number label that is neither (written as it is)
  const summary = {
    name: 'test_summary',
    help: 'a summary',
    type: 'summary',
    values: [
      { labels: { quantile: 0.5 }, value: 2 },
      { labels: { quantile: 1 }, value: 1e6 },
      { metricName: 'test_summary_sum', value: 3 },
      { metricName: 'test_summary_count', value: 2 },
    ],
  };
  t.equal(familyText(summary, false), '# HELP test_summary a summary\n# TYPE test_summary summary\ntest_summary{quantile="0.5"} 2\ntest_summary{quantile="1"} 1e+06\ntest_summary_sum 3\ntest_summary_count 2');
  t.equal(familyText(summary, true), '# HELP test_summary a summary\n# TYPE test_summary summary\ntest_summary{quantile="0.5"} 2.0\ntest_summary{quantile="1.0"} 1e+06\ntest_summary_sum 3.0\ntest_summary_count 2');
  t.equal(familyText({ name: 'test_info', help: 'i', type: 'gauge', values: [{ labels: { major: 22 }, value: 1 }] }, true), '# HELP test_info i\n# TYPE test_info gauge\ntest_info{major="22"} 1.0');
});

t.test('values are written as upstream writes them: floats in the text format; in OpenMetrics floats with a point, counts as integers', async (t) => {
  const r = new StabilityRegistry({ current });
  r.counter({ name: 'test_big_total', help: 'big', stability: 'ALPHA' }).inc(1234567);
  r.gauge({ name: 'test_level', help: 'level', stability: 'ALPHA', aggregator: 'sum' }).set(3);
  r.counter({ name: 'test_plain', help: 'no _total', stability: 'ALPHA' }).inc(2);
  const h = r.histogram({ name: 'test_sizes', help: 'sizes', stability: 'ALPHA', buckets: exponentialBuckets(1000, 10, 7) });
  for (let i = 0; i < 3; i++) h.observe(500);
  const text = (await r.expose(false)).body;
  t.match(text, /^test_big_total 1\.234567e\+06$/m, 'text: a count past a million in exponent form, as writeFloat writes it');
  t.match(text, /^test_level 3$/m);
  t.match(text, /^# TYPE test_plain counter\ntest_plain 2$/m, 'text: a counter without _total as declared');
  t.match(text, /^test_sizes_bucket\{le="1e\+06"\} 3$/m);
  t.match(text, /^test_sizes_sum 1500$/m);
  t.match(text, /^test_sizes_count 3$/m);
  const om = (await r.expose(true)).body;
  t.match(om, /^test_big_total 1\.234567e\+06$/m);
  t.match(om, /^test_level 3\.0$/m, 'OpenMetrics: a float with its point');
  t.match(om, /^# TYPE test_plain unknown\ntest_plain 2\.0$/m, 'OpenMetrics: a counter without _total is unknown, its name kept (expfmt)');
  t.match(om, /^test_sizes_bucket\{le="1000\.0"\} 3$/m, 'OpenMetrics: bucket counts are integers');
  t.match(om, /^test_sizes_bucket\{le="1e\+06"\} 3$/m);
  t.match(om, /^test_sizes_sum 1500\.0$/m);
  t.match(om, /^test_sizes_count 3$/m);
  const fams = parseOpenMetricsText(om);
  t.equal(fams.get('test_plain')!.type, 'unknown');
  t.equal(fams.get('test_sizes')!.samples.find((m) => m.labels.le === '1e+06')!.value, 3);
});

t.test("a timing histogram counts the seconds its gauge's value spent in each bucket (upstream's TimingHistogram)", async (t) => {
  let now = 0;
  const h = new TimingHistogramMetric('test_timing', '[ALPHA] t', ['level'], [0.5, 1], () => now);
  const c = h.with('a');
  c.set(0.25); // from 0 at t=0 to 0.25 at once
  now = 2000;
  c.set(1); // 2 s at 0.25
  now = 3000;
  c.set(3); // 1 s at 1
  now = 3500; // 0.5 s at 3 so far (counted at the scrape)
  const { values } = await h.getForPromString();
  const v = (metric: string, le?: number | string): number | undefined => values.find((x) => x.metricName === metric && (le === undefined || x.labels.le === le))?.value;
  t.equal(v('test_timing_bucket', 0.5), 2, 'le 0.5: the 2 s at 0.25');
  t.equal(v('test_timing_bucket', 1), 3, 'le 1: and the 1 s at 1 (cumulative)');
  t.equal(v('test_timing_bucket', '+Inf'), 3.5, '+Inf: every second observed, the 0.5 s at 3 included');
  t.equal(v('test_timing_count'), 3.5, '_count: the seconds observed');
  t.equal(v('test_timing_sum'), 0.25 * 2 + 1 * 1 + 3 * 0.5, '_sum: the integral of the value over time');
});
