import t from 'tap';
import { parsePrometheusText, sampleValue } from '../helpers/prometheus.js';
import { helpText, showHiddenMetricsFor, StabilityRegistry, visibilityOf, wantsOpenMetrics } from '../../core/metrics/registry.js';

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
  r.gauge({ name: 'test_stable', help: 'stable', stability: 'STABLE' }).set(3);
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
  t.match(om.body, /# HELP test_om \[BETA\] om\n# TYPE test_om counter\ntest_om_total 1\n# EOF\n?$/);
});
