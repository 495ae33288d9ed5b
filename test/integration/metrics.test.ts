import t from 'tap';
import { type PromFamily, parsePrometheusText } from '../helpers/prometheus.js';
import { parseFlags } from '../../core/server/options.js';
import { createCrd, crd, waitEstablished } from '../helpers/crd.js';
import { kubectlAsToken } from '../helpers/kubectl.js';
import { ALICE_TOKEN, startServer, type TestServer } from '../helpers/server.js';
import type { Client } from '../helpers/client.js';

type Family = PromFamily;

async function scrape(c: Client): Promise<Map<string, Family>> {
  const r = await c.get('/metrics');
  if (r.status !== 200) throw new Error(`scrape: ${r.status} ${r.text}`);
  return parsePrometheusText(r.text);
}

/** The sum of the samples named `name` whose labels include `labels`. */
function valueOf(fams: Map<string, Family>, name: string, labels: Record<string, string>): number {
  const family = fams.get(name) ?? fams.get(name.replace(/_(total|count|sum)$/, ''));
  let sum = 0;
  // the parser names every counter sample <family>_total, also those upstream names without the suffix
  for (const m of family?.samples ?? []) if ((m.name === name || m.name === `${name}_total`) && Object.entries(labels).every(([k, v]) => m.labels[k] === v)) sum += m.value;
  return sum;
}

let s: TestServer;
t.before(async () => {
  s = await startServer(['--workers=1']);
});
t.teardown(() => s.stop());

t.test('every metric upstream names is exposed with its type, stability class and labels', async (t) => {
  // one request of each kind so labelled families have samples
  await s.admin.get('/api/v1/namespaces/default/configmaps');
  // and one through a limited priority level's queue (an exempt request never waits)
  await s.admin.with({ token: ALICE_TOKEN }).get('/version');
  const fams = await scrape(s.admin);
  const table: [string, string, string, string[]][] = [
    ['apiserver_request_total', 'COUNTER', '[STABLE]', ['verb', 'dry_run', 'group', 'version', 'resource', 'subresource', 'scope', 'component', 'code']],
    ['apiserver_request_duration_seconds', 'HISTOGRAM', '[STABLE]', ['verb', 'dry_run', 'group', 'version', 'resource', 'subresource', 'scope', 'component']],
    ['apiserver_response_sizes', 'HISTOGRAM', '[STABLE]', ['verb', 'group', 'version', 'resource', 'subresource', 'scope', 'component']],
    ['apiserver_current_inflight_requests', 'GAUGE', '[STABLE]', ['request_kind']],
    ['apiserver_longrunning_requests', 'GAUGE', '[STABLE]', []],
    ['apiserver_request_terminations_total', 'COUNTER', '[ALPHA]', []],
    ['apiserver_watch_events_total', 'COUNTER', '[ALPHA]', []],
    ['apiserver_watch_events_sizes', 'HISTOGRAM', '[ALPHA]', []],
    ['apiserver_storage_objects', 'GAUGE', '[STABLE]', ['resource']],
    ['apiserver_storage_request_duration_seconds', 'HISTOGRAM', '[ALPHA]', ['operation', 'type']],
    ['apiserver_requested_deprecated_apis', 'GAUGE', '[STABLE]', []],
    ['apiserver_audit_event_total', 'COUNTER', '[ALPHA]', []],
    ['apiserver_authorization_decisions_total', 'COUNTER', '[ALPHA]', []],
    ['authentication_attempts', 'COUNTER', '[ALPHA]', ['result']],
    ['authentication_duration_seconds', 'HISTOGRAM', '[ALPHA]', ['result']],
    ['apiserver_authentication_config_controller_automatic_reload_last_timestamp_seconds', 'GAUGE', '[ALPHA]', []],
    ['apiserver_flowcontrol_dispatched_requests_total', 'COUNTER', '[BETA]', ['flow_schema', 'priority_level']],
    ['apiserver_flowcontrol_current_executing_requests', 'GAUGE', '[BETA]', ['flow_schema', 'priority_level']],
    ['apiserver_flowcontrol_current_inqueue_requests', 'GAUGE', '[BETA]', ['flow_schema', 'priority_level']],
    ['apiserver_flowcontrol_request_wait_duration_seconds', 'HISTOGRAM', '[BETA]', ['execute', 'flow_schema', 'priority_level']],
    ['apiserver_flowcontrol_nominal_limit_seats', 'GAUGE', '[BETA]', ['priority_level']],
    ['apiserver_flowcontrol_current_limit_seats', 'GAUGE', '[ALPHA]', ['priority_level']],
    ['apiserver_flowcontrol_request_execution_seconds', 'HISTOGRAM', '[ALPHA]', ['flow_schema', 'priority_level', 'type']],
    ['process_resident_memory_bytes', 'GAUGE', '', []],
    ['process_cpu_seconds_total', 'COUNTER', '', []],
  ];
  for (const [name, type, stability, labels] of table) {
    const f = fams.get(type === 'COUNTER' ? name.replace(/_total$/, '') : name);
    if (!t.ok(f, `${name} is exposed`)) continue;
    t.equal(f!.type, type.toLowerCase(), `${name} type`);
    if (stability) t.ok(f!.help.startsWith(`${stability} `), `${name} help starts with ${stability}: ${f!.help}`);
    else t.notMatch(f!.help, /^\[(ALPHA|BETA|STABLE)\]/, `${name} has no stability class, as upstream`);
    const sample = type === 'HISTOGRAM' ? f!.samples.find((m) => m.name === `${name}_count`) : f!.samples[0];
    if (labels.length) t.same(Object.keys(sample?.labels ?? {}).sort(), [...labels].sort(), `${name} labels`);
  }
  t.equal(valueOf(fams, 'apiserver_storage_objects', { resource: 'namespaces' }), 4);
});

t.test('apiserver_request_total moves by exactly the requests made, by verb, resource, scope and code', async (t) => {
  const cm = { verb: 'POST', resource: 'configmaps', scope: 'resource', group: '', version: 'v1' };
  const before = await scrape(s.admin);
  for (let i = 0; i < 3; i++) t.equal((await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: `count-${i}` } })).status, 201);
  t.equal((await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'count-0' } })).status, 409);
  t.equal((await s.admin.post('/api/v1/namespaces/default/configmaps?dryRun=All', { metadata: { name: 'dry' } })).status, 201);
  t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps/count-1')).status, 200);
  t.equal((await s.admin.get('/api/v1/namespaces/default/configmaps/nope')).status, 404);
  t.equal((await s.admin.get('/api/v1/configmaps')).status, 200);
  t.equal((await s.admin.patch('/api/v1/namespaces/default/configmaps/count-2?fieldManager=m', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'count-2' }, data: { a: 'b' } }, 'application/apply-patch+yaml')).status, 200);
  const after = await scrape(s.admin);
  const delta = (labels: Record<string, string>): number => valueOf(after, 'apiserver_request_total', labels) - valueOf(before, 'apiserver_request_total', labels);
  t.equal(delta({ ...cm, code: '201', dry_run: '' }), 3);
  t.equal(delta({ ...cm, code: '409' }), 1);
  t.equal(delta({ ...cm, code: '201', dry_run: 'All' }), 1);
  t.equal(delta({ verb: 'GET', resource: 'configmaps', scope: 'resource', code: '200' }), 1);
  t.equal(delta({ verb: 'GET', resource: 'configmaps', scope: 'resource', code: '404' }), 1);
  t.equal(delta({ verb: 'LIST', resource: 'configmaps', scope: 'cluster', code: '200' }), 1);
  t.equal(delta({ verb: 'APPLY', resource: 'configmaps', scope: 'resource', code: '200' }), 1);
  // duration histogram counts the same requests
  const durations = (fams: Map<string, Family>): number => valueOf(fams, 'apiserver_request_duration_seconds_count', { ...cm, dry_run: '' });
  t.equal(durations(after) - durations(before), 4);
  // the store timed the writes in the pool worker and the timings reached the main thread: three
  // creates and the one refused as existing (a dry run never reaches the store)
  const creates = (fams: Map<string, Family>): number => valueOf(fams, 'apiserver_storage_request_duration_seconds_count', { operation: 'create', type: 'configmaps' });
  t.equal(creates(after) - creates(before), 4);
});

t.test('requests to unknown resources are counted without the resource, so label sets stay bounded', async (t) => {
  const before = await scrape(s.admin);
  for (let i = 0; i < 5; i++) t.equal((await s.admin.get(`/api/v1/namespaces/default/nothing${i}`)).status, 404);
  const after = await scrape(s.admin);
  const f = after.get('apiserver_request')!;
  t.notOk(f.samples.some((m) => m.labels.resource?.startsWith('nothing')));
  // /api/v1/namespaces/default/<plural> lists an (unknown) resource
  const unknown = { verb: 'LIST', resource: '', version: '', scope: 'namespace', code: '404' };
  t.equal(valueOf(after, 'apiserver_request_total', unknown) - valueOf(before, 'apiserver_request_total', unknown), 5);
});

t.test('made-up subresources and dryRun values are not label values: upstream counts them as no subresource and dry_run="invalid"', async (t) => {
  await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'labels-cm' } });
  for (let i = 0; i < 3; i++) t.equal((await s.admin.get(`/api/v1/namespaces/default/configmaps/labels-cm/made-up-${i}`)).status, 404);
  t.equal((await s.admin.post('/api/v1/namespaces/default/configmaps?dryRun=Bogus&dryRun=All', { metadata: { name: 'labels-dry' } })).status, 400);
  const after = await scrape(s.admin);
  const f = after.get('apiserver_request')!;
  t.notOk(f.samples.some((m) => m.labels.subresource?.startsWith('made-up')), 'no subresource label value from the path');
  t.notOk(f.samples.some((m) => m.labels.dry_run?.includes('Bogus')), 'no dry_run label value from the query');
  t.equal(valueOf(after, 'apiserver_request_total', { verb: 'GET', resource: '', subresource: '', code: '404' }) >= 3, true);
  t.equal(valueOf(after, 'apiserver_request_total', { verb: 'POST', resource: 'configmaps', dry_run: 'invalid', code: '400' }), 1);
});

t.test('authentication and authorization outcomes are counted', async (t) => {
  const before = await scrape(s.admin);
  t.equal((await s.admin.with({ token: 'not-a-token' }).get('/api/v1/namespaces')).status, 401);
  t.equal((await s.admin.with({ token: ALICE_TOKEN }).get('/api/v1/namespaces/default/secrets')).status, 403);
  const after = await scrape(s.admin);
  const d = (name: string, l: Record<string, string>): number => valueOf(after, name, l) - valueOf(before, name, l);
  t.equal(d('authentication_attempts', { result: 'error' }), 1);
  t.ok(d('authentication_attempts', { result: 'success' }) >= 2, 'alice and the scrape itself');
  t.equal(valueOf(after, 'apiserver_request_total', { code: '401' }) - valueOf(before, 'apiserver_request_total', { code: '401' }), 1);
  t.ok(valueOf(after, 'apiserver_authorization_decisions_total', { type: 'RBAC', name: 'rbac', decision: 'allowed' }) >= 1);
});

t.test('/metrics is a non-resource get: anonymous is forbidden, system:monitoring may read it', async (t) => {
  const anon = await s.anon.get('/metrics');
  t.equal(anon.status, 403);
  t.match(anon.json.message, /cannot get path "\/metrics"/);
  const alice = s.admin.with({ token: ALICE_TOKEN });
  t.equal((await alice.get('/metrics')).status, 403);
  const binding = {
    apiVersion: 'rbac.authorization.svc.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'alice-monitoring' },
    roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'ClusterRole', name: 'system:monitoring' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.svc.io', name: 'alice' }],
  };
  t.equal((await s.admin.post('/apis/rbac.authorization.svc.io/v1/clusterrolebindings', binding)).status, 201);
  const r = await alice.get('/metrics');
  t.equal(r.status, 200);
  t.match(r.headers['content-type'], /^text\/plain; version=0\.0\.4/);
  t.equal((await alice.post('/metrics', {})).status, 403, 'only get is granted');
});

t.test('a scraper that prefers OpenMetrics gets OpenMetrics', async (t) => {
  const r = await s.admin.get('/metrics', { accept: 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5' });
  t.equal(r.status, 200);
  t.match(r.headers['content-type'], /^application\/openmetrics-text; version=1\.0\.0/);
  t.match(r.text, /# TYPE apiserver_request counter\n/);
  t.match(r.text, /# EOF\n?$/);
  t.equal(r.text.match(/# EOF/g)!.length, 1);
});

t.test('watch events are counted per event sent, and an open watch is a long-running request', async (t) => {
  const before = await scrape(s.admin);
  const w = await s.admin.stream('/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0');
  const mid = await scrape(s.admin);
  t.equal(valueOf(mid, 'apiserver_longrunning_requests', { verb: 'WATCH', resource: 'configmaps' }), 1);
  t.equal((await s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'watched' } })).status, 201);
  for (let e = await w.next(); e; e = await w.next()) if (e.type === 'ADDED' && e.object.metadata.name === 'watched') break;
  w.close();
  const after = await scrape(s.admin);
  // the watch is of one namespace; the store also holds svc-system's extension-apiserver-authentication
  const initial = valueOf(before, 'apiserver_storage_objects', { resource: 'configmaps' }) - (await s.admin.get('/api/v1/configmaps')).json.items.filter((c: { metadata: { namespace: string } }) => c.metadata.namespace !== 'default').length;
  const sent = valueOf(after, 'apiserver_watch_events_total', { kind: 'ConfigMap', version: 'v1' }) - valueOf(before, 'apiserver_watch_events_total', { kind: 'ConfigMap', version: 'v1' });
  t.equal(sent, initial + 1, 'the initial ADDED events and the new one');
});

t.test('scrapes during a burst of writes all succeed and parse', async (t) => {
  const writes = Array.from({ length: 300 }, (_, i) => s.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: `burst-${i}` }, data: { v: 'x'.repeat(100) } }));
  const scrapes = Array.from({ length: 5 }, () => scrape(s.admin));
  const fams = await Promise.all(scrapes);
  t.ok(fams.every((f) => f.has('apiserver_request')));
  t.ok((await Promise.all(writes)).every((r) => r.status === 201));
});

t.test('a deprecated version answers with a Warning, sets apiserver_requested_deprecated_apis, and kubectl prints it', async (t) => {
  const def = crd({
    group: 'deprecated.example.com',
    versions: [
      { name: 'v1beta1', served: true, storage: false, deprecated: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
      { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
    ],
  });
  await createCrd(s.admin, def);
  await waitEstablished(s.admin, def.metadata.name);
  const path = '/apis/deprecated.example.com/v1beta1/namespaces/default/widgets';
  let r = await s.admin.get(path);
  for (let i = 0; r.status === 404 && i < 50; i++) {
    await new Promise((res) => setTimeout(res, 100));
    r = await s.admin.get(path);
  }
  t.equal(r.status, 200);
  t.equal(r.headers.warning, '299 - "deprecated.example.com/v1beta1 Widget is deprecated"');
  t.equal((await s.admin.get('/apis/deprecated.example.com/v1/namespaces/default/widgets')).headers.warning, undefined);
  const fams = await scrape(s.admin);
  t.equal(valueOf(fams, 'apiserver_requested_deprecated_apis', { group: 'deprecated.example.com', version: 'v1beta1', resource: 'widgets', subresource: '', removed_release: '' }), 1);
  t.notOk(fams.get('apiserver_requested_deprecated_apis')!.samples.some((m) => m.labels.version === 'v1'));
  const kubectl = kubectlAsToken(s.dataDir, s, 'admin', 'admin-token-0123456789');
  const k = await kubectl(['get', 'widgets.v1beta1.deprecated.example.com']);
  t.equal(k.code, 0, k.stderr);
  t.match(k.stderr, /Warning: deprecated\.example\.com\/v1beta1 Widget is deprecated/);
});

t.test('--show-hidden-metrics-for-version takes only the previous minor release', async (t) => {
  t.doesNotThrow(() => parseFlags(['--show-hidden-metrics-for-version=1.31']));
  t.throws(() => parseFlags(['--show-hidden-metrics-for-version=1.30']), /must be omitted or have the value '1\.31'/);
});
