import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ALICE_TOKEN, startServer, tempDir, type TestServer } from '../helpers/server.js';
import { type Event, eventsOf, readEvents, writePolicy } from '../helpers/audit.js';
import { waitFor } from '../helpers/wait.js';

const POLICY = `apiVersion: audit.svc.io/v1
kind: Policy
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/livez*", "/readyz*"]
  - level: RequestResponse
    namespaces: [rr]
  - level: Request
    namespaces: [req]
  - level: RequestResponse
    namespaces: [nomf]
    omitManagedFields: true
  - level: Metadata
    namespaces: [quiet]
    omitStages: [RequestReceived]
  - level: Metadata
`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

let s: TestServer;
let log: string;

t.before(async () => {
  const dir = tempDir('svc-audit-');
  log = join(dir, 'audit.log');
  s = await startServer([`--audit-policy-file=${writePolicy(dir, POLICY)}`, `--audit-log-path=${log}`]);
  for (const ns of ['rr', 'req', 'nomf', 'quiet', 'meta']) await s.admin.post('/api/v1/namespaces', { metadata: { name: ns } });
});
t.teardown(() => s.stop());

const stagesOf = (evs: Event[]) => evs.map((e) => e.stage);
const idOf = (r: { headers: Record<string, unknown> }) => r.headers['audit-id'] as string;

t.test('Metadata: RequestReceived then ResponseComplete, with the Audit-Id of the answer and no objects', async (t) => {
  await s.admin.post('/api/v1/namespaces/meta/configmaps', { metadata: { name: 'a' }, data: { k: 'v' } });
  const r = await s.admin.get('/api/v1/namespaces/meta/configmaps/a?resourceVersion=0', { headers: { 'user-agent': 'audit-test/1.0' } });
  t.equal(r.status, 200);
  t.match(idOf(r), UUID, 'a UUID in the Audit-Id header');
  const evs = await eventsOf(log, idOf(r), 2);
  t.same(stagesOf(evs), ['RequestReceived', 'ResponseComplete']);
  const [rr, done] = evs as [Event, Event];
  t.equal(done.kind, 'Event');
  t.equal(done.apiVersion, 'audit.svc.io/v1');
  t.equal(done.level, 'Metadata');
  t.equal(done.verb, 'get');
  t.equal(done.requestURI, '/api/v1/namespaces/meta/configmaps/a?resourceVersion=0');
  t.equal(done.user.username, 'admin');
  t.same(done.user.groups, ['system:masters', 'system:authenticated']);
  t.same(done.sourceIPs, ['127.0.0.1']);
  t.equal(done.userAgent, 'audit-test/1.0');
  t.same(done.objectRef, { resource: 'configmaps', namespace: 'meta', name: 'a', apiVersion: 'v1' }, 'the core group: no apiGroup (omitempty)');
  t.same(done.responseStatus, { metadata: {}, code: 200 });
  t.notOk('requestObject' in done || 'responseObject' in done, 'no objects at Metadata');
  t.match(done.requestReceivedTimestamp, MICRO_TIME);
  t.match(done.stageTimestamp, MICRO_TIME);
  t.equal(rr.stageTimestamp, rr.requestReceivedTimestamp, 'RequestReceived is stamped when the request arrived');
  t.ok(done.stageTimestamp >= done.requestReceivedTimestamp);
  t.notOk(rr.responseStatus, 'no status before the answer');
  t.equal(done.annotations['authorization.svc.io/decision'], 'allow');
  t.type(done.annotations['authorization.svc.io/reason'], 'string');
});

t.test('Request: the request object is logged, not the response; a create names its object in objectRef', async (t) => {
  const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'b' }, data: { k: 'v' } };
  const r = await s.admin.post('/api/v1/namespaces/req/configmaps', body);
  t.equal(r.status, 201);
  const evs = await eventsOf(log, idOf(r), 2);
  const done = evs.find((e) => e.stage === 'ResponseComplete')!;
  t.equal(done.level, 'Request');
  t.equal(done.verb, 'create');
  t.same(done.requestObject, body);
  t.notOk('responseObject' in done);
  t.equal(done.objectRef.name, 'b');
  t.same(done.responseStatus, { metadata: {}, code: 201 });
});

t.test('RequestResponse: request and response objects, managedFields kept', async (t) => {
  const r = await s.admin.post('/api/v1/namespaces/rr/configmaps', { metadata: { name: 'c' }, data: { k: 'v' } });
  const evs = await eventsOf(log, idOf(r), 2);
  const done = evs.find((e) => e.stage === 'ResponseComplete')!;
  t.equal(done.level, 'RequestResponse');
  t.same(done.requestObject, { metadata: { name: 'c' }, data: { k: 'v' } });
  t.equal(done.responseObject.kind, 'ConfigMap');
  t.equal(done.responseObject.metadata.uid, r.json.metadata.uid);
  t.ok(Array.isArray(done.responseObject.metadata.managedFields), 'managedFields are logged when not omitted');
  const list = await s.admin.get('/api/v1/namespaces/rr/configmaps');
  const listed = (await eventsOf(log, idOf(list), 2)).find((e) => e.stage === 'ResponseComplete')!;
  t.equal(listed.responseObject.kind, 'ConfigMapList', 'a list answer is logged whole');
  t.equal(listed.responseObject.items.length, 1);
});

t.test('omitManagedFields: objects are logged without metadata.managedFields', async (t) => {
  const sent = { metadata: { name: 'd', managedFields: [{ manager: 'x', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: {} }] }, data: { k: 'v' } };
  const r = await s.admin.post('/api/v1/namespaces/nomf/configmaps', sent);
  t.equal(r.status, 201, r.text);
  const done = (await eventsOf(log, idOf(r), 2)).find((e) => e.stage === 'ResponseComplete')!;
  t.same(done.requestObject, { metadata: { name: 'd' }, data: { k: 'v' } });
  t.equal(done.responseObject.metadata.name, 'd');
  t.notOk('managedFields' in done.responseObject.metadata);
  const list = await s.admin.get('/api/v1/namespaces/nomf/configmaps');
  const listed = (await eventsOf(log, idOf(list), 2)).find((e) => e.stage === 'ResponseComplete')!;
  t.notOk('managedFields' in listed.responseObject.items[0].metadata, 'nor from the items of a list');
});

t.test('omitStages: an omitted stage is not written', async (t) => {
  const r = await s.admin.get('/api/v1/namespaces/quiet/configmaps');
  const evs = await eventsOf(log, idOf(r), 1);
  t.same(stagesOf(evs), ['ResponseComplete']);
});

t.test('None: nothing is written, and the Audit-Id header is still sent', async (t) => {
  const r = await s.admin.get('/healthz');
  t.equal(r.status, 200);
  t.match(idOf(r), UUID);
  const after = await s.admin.get('/api/v1/namespaces/meta/configmaps');
  await eventsOf(log, idOf(after), 2);
  t.same(readEvents(log).filter((e) => e.auditID === idOf(r)), [], 'no event for the health check');
});

t.test('a 403 carries decision forbid, the reason and the failure status', async (t) => {
  const alice = s.admin.with({ token: ALICE_TOKEN });
  const r = await alice.get('/api/v1/namespaces/meta/configmaps/a');
  alice.close();
  t.equal(r.status, 403);
  const done = (await eventsOf(log, idOf(r), 2)).find((e) => e.stage === 'ResponseComplete')!;
  t.equal(done.user.username, 'alice');
  t.equal(done.annotations['authorization.svc.io/decision'], 'forbid');
  t.type(done.annotations['authorization.svc.io/reason'], 'string');
  t.equal(done.responseStatus.code, 403);
  t.equal(done.responseStatus.status, 'Failure');
  t.equal(done.responseStatus.reason, 'Forbidden');
  t.match(done.responseStatus.message, 'configmaps "a" is forbidden: User "alice" cannot get resource "configmaps"');
});

t.test('a failed authentication is audited at ResponseStarted with no user, as upstream', async (t) => {
  const bad = s.admin.with({ token: 'no-such-token' });
  const r = await bad.get('/api/v1/namespaces/meta/configmaps');
  bad.close();
  t.equal(r.status, 401);
  const evs = await eventsOf(log, idOf(r), 1);
  t.same(stagesOf(evs), ['ResponseStarted']);
  t.same(evs[0]!.user, {});
  t.same(evs[0]!.responseStatus, { metadata: {}, message: 'Authentication failed, attempted: bearer', code: 401 });
});

t.test('a malformed ?timeout= is audited like a failed authentication: ResponseStarted, no user, the 400 and its message', async (t) => {
  const r = await s.admin.get('/api/v1/namespaces/meta/configmaps?timeout=soon');
  t.equal(r.status, 400);
  const evs = await eventsOf(log, idOf(r), 1);
  t.same(stagesOf(evs), ['ResponseStarted']);
  t.same(evs[0]!.user, {}, 'refused before authentication');
  t.same(evs[0]!.responseStatus, { metadata: {}, message: 'invalid timeout specified in the request URL: soon', code: 400 });
});

t.test('a client Audit-ID is kept, echoed and logged', async (t) => {
  const r = await s.admin.get('/api/v1/namespaces/meta/configmaps', { headers: { 'Audit-ID': 'caller-chosen-id-1' } });
  t.equal(idOf(r), 'caller-chosen-id-1');
  t.same(stagesOf(await eventsOf(log, 'caller-chosen-id-1', 2)), ['RequestReceived', 'ResponseComplete']);
});

t.test('impersonation: the event names the caller as user and the impersonated user', async (t) => {
  const r = await s.admin.get('/api/v1/namespaces/meta/configmaps', { headers: { 'Impersonate-User': 'bob' } });
  t.equal(r.status, 403);
  const done = (await eventsOf(log, idOf(r), 2)).find((e) => e.stage === 'ResponseComplete')!;
  t.equal(done.user.username, 'admin');
  t.equal(done.impersonatedUser.username, 'bob');
  t.same(done.impersonatedUser.groups, ['system:authenticated']);
});

t.test('a watch: RequestReceived, ResponseStarted when the stream opens, ResponseComplete when it ends', async (t) => {
  const w = await s.admin.stream('/api/v1/namespaces/meta/configmaps?watch=1&timeoutSeconds=1');
  t.equal(w.status, 200);
  const id = w.headers['audit-id'] as string;
  t.match(id, UUID);
  const started = await eventsOf(log, id, 2);
  t.same(stagesOf(started), ['RequestReceived', 'ResponseStarted'], 'ResponseStarted before the stream ends');
  t.equal(started[1]!.responseStatus.code, 200);
  t.ok(await w.waitEnd(10_000), 'the server ends the watch');
  const evs = await eventsOf(log, id, 3);
  t.same(stagesOf(evs), ['RequestReceived', 'ResponseStarted', 'ResponseComplete']);
  t.equal(evs[2]!.verb, 'watch');
});

t.test('a non-resource request has no objectRef and the method as its verb', async (t) => {
  const r = await s.admin.get('/version');
  const done = (await eventsOf(log, idOf(r), 2)).find((e) => e.stage === 'ResponseComplete')!;
  t.equal(done.verb, 'get');
  t.notOk('objectRef' in done);
  t.equal(done.requestURI, '/version');
});

/**
 * The omitempty fields of an event that are written empty: upstream's JSON leaves out an empty
 * omitempty string, list or map (k8s.io/apiserver/pkg/apis/audit/v1 Event's sourceIPs, userAgent and
 * annotations, every field of its ObjectReference, every field of authentication/v1 UserInfo, and
 * metav1.Status's status, message, reason and code).
 */
function emptyOmitempty(e: Event): string[] {
  const empty = (v: unknown): boolean => v === '' || v === 0 || v === null || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && v !== null && Object.keys(v).length === 0);
  const found: string[] = [];
  const check = (o: Event | undefined, path: string, fields: string[]): void => {
    if (o) for (const f of fields) if (f in o && empty(o[f])) found.push(`${path}${f}`);
  };
  check(e, '', ['sourceIPs', 'userAgent', 'annotations']);
  check(e.objectRef, 'objectRef.', ['resource', 'namespace', 'name', 'uid', 'apiGroup', 'apiVersion', 'resourceVersion', 'subresource']);
  check(e.user, 'user.', ['username', 'uid', 'groups', 'extra']);
  check(e.impersonatedUser, 'impersonatedUser.', ['username', 'uid', 'groups', 'extra']);
  check(e.responseStatus, 'responseStatus.', ['status', 'message', 'reason', 'code']);
  return found;
}

t.test('empty omitempty fields are left out as upstream leaves them: the core group has no apiGroup, a named group has its own', async (t) => {
  const core = await s.admin.get('/api/v1/namespaces/meta/configmaps/a', { headers: { 'user-agent': '' } });
  t.equal(core.status, 200);
  const named = await s.admin.get('/apis/storage.svc.io/v1/csidrivers');
  t.equal(named.status, 200);
  const coreDone = (await eventsOf(log, idOf(core), 2)).find((e) => e.stage === 'ResponseComplete')!;
  t.same(coreDone.objectRef, { resource: 'configmaps', namespace: 'meta', name: 'a', apiVersion: 'v1' });
  t.notOk('userAgent' in coreDone, 'an empty User-Agent is no userAgent');
  const namedDone = (await eventsOf(log, idOf(named), 2)).find((e) => e.stage === 'ResponseComplete')!;
  t.same(namedDone.objectRef, { resource: 'csidrivers', apiGroup: 'storage.svc.io', apiVersion: 'v1' });
  const lines = readFileSync(log, 'utf8').split('\n').filter((l) => l.includes(`"auditID":"${idOf(core)}"`));
  t.equal(lines.length, 2);
  for (const l of lines) t.notMatch(l, /"apiGroup"/, 'the line itself has no apiGroup');
  // and every event written so far (reads, writes, watches, failures, impersonation, non-resource paths)
  const written = readEvents(log).map((e) => ({ id: `${e.auditID} ${e.stage} ${e.requestURI}`, empty: emptyOmitempty(e) })).filter((e) => e.empty.length);
  t.same(written, [], 'no event writes an empty omitempty field');
});

t.test('every line of the log is one JSON event', async (t) => {
  t.ok(await waitFor(() => readEvents(log).length > 10));
  for (const e of readEvents(log)) t.equal(e.kind, 'Event', `line of ${e.auditID}`);
});

t.test('--audit-log-path=- writes the events to standard out, one JSON object a line', async (t) => {
  const { spawnServer, freePort } = await import('../helpers/server.js');
  const dir = tempDir('svc-audit-stdout-');
  const srv = await spawnServer(dir, await freePort(), [`--audit-policy-file=${writePolicy(dir, POLICY)}`, '--audit-log-path=-']);
  t.teardown(() => srv.kill());
  const r = await srv.admin.get('/api/v1/namespaces/default/configmaps');
  const id = r.headers['audit-id'] as string;
  const lines = () => srv.output().split('\n').filter((l) => l.startsWith('{') && l.includes(id));
  t.ok(await waitFor(() => lines().length === 2), 'both stages on stdout');
  t.same(lines().map((l) => (JSON.parse(l) as Event).stage), ['RequestReceived', 'ResponseComplete']);
});

t.test('Request level: a patch is logged as the patch sent', async (t) => {
  await s.admin.post('/api/v1/namespaces/req/configmaps', { metadata: { name: 'p' }, data: { k: 'v' } });
  const patch = { data: { k: 'w' } };
  const r = await s.admin.patch('/api/v1/namespaces/req/configmaps/p', patch, 'application/merge-patch+json');
  t.equal(r.status, 200);
  const done = (await eventsOf(log, idOf(r), 2)).find((e) => e.stage === 'ResponseComplete')!;
  t.equal(done.verb, 'patch');
  t.same(done.requestObject, patch);
});

t.test('without --audit-policy-file nothing is audited, and every answer still carries Audit-Id', async (t) => {
  const plain = await startServer();
  t.teardown(() => plain.stop());
  const r = await plain.admin.get('/api/v1/namespaces');
  t.match(idOf(r), UUID);
  const again = await plain.admin.get('/api/v1/namespaces');
  t.not(idOf(again), idOf(r), 'a new ID for each request');
  t.equal(idOf(await plain.anon.get('/api/v1/namespaces/default/secrets', { headers: { 'Audit-ID': 'mine' } })), 'mine', 'on errors too, the caller’s ID kept');
});

t.test("the log's lines are escaped as upstream's encoding/json escapes them: a query's & is \\u0026", async (t) => {
  const r = await s.admin.get('/api/v1/namespaces/meta/configmaps?limit=5&resourceVersion=0', { headers: { 'user-agent': 'escape-test <1.0>' } });
  t.equal(r.status, 200);
  t.equal((await eventsOf(log, idOf(r), 2)).length, 2);
  const lines = readFileSync(log, 'utf8').split('\n').filter((l) => l.includes(`"auditID":"${idOf(r)}"`));
  t.equal(lines.length, 2);
  for (const l of lines) {
    t.match(l, /"requestURI":"\/api\/v1\/namespaces\/meta\/configmaps\?limit=5\\u0026resourceVersion=0"/);
    t.match(l, /"userAgent":"escape-test \\u003c1\.0\\u003e"/);
  }
  t.equal(JSON.parse(lines[1]!).requestURI, '/api/v1/namespaces/meta/configmaps?limit=5&resourceVersion=0', 'read back as sent');
});

t.test('requestURI is the request target as sent, as upstream records it: escapes kept, not the decoded path', async (t) => {
  const r = await s.admin.get('/api/v1/namespaces/%6Deta/configmaps/a%62c?resourceVersion=0');
  t.equal(r.status, 404, 'namespace meta, config map abc');
  const evs = await eventsOf(log, idOf(r), 2);
  t.same(evs.map((e) => e.requestURI), ['/api/v1/namespaces/%6Deta/configmaps/a%62c?resourceVersion=0', '/api/v1/namespaces/%6Deta/configmaps/a%62c?resourceVersion=0']);
  t.same(evs[1]?.objectRef, { resource: 'configmaps', namespace: 'meta', name: 'abc', apiVersion: 'v1' }, 'the objectRef is the decoded one');
});
