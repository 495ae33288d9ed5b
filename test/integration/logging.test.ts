import t from 'tap';
import { spawn } from 'node:child_process';
import { request as httpsRequest } from 'node:https';
import { ADMIN_TOKEN, binPath, freePort, spawnServer, tempDir, type SpawnedServer, childEnv } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

t.test('--logging-format=json: every line is a JSON object, and -v=3 logs each request as upstream', async (t) => {
  const dir = tempDir();
  const srv = await spawnServer(dir, await freePort(), ['--logging-format=json', '-v=3', '--workers=0']);
  t.teardown(() => srv.kill());
  const before = Date.now();
  const r = await srv.admin.get('/api/v1/namespaces/default', { headers: { 'user-agent': 'log-test/1.0' } });
  t.equal(r.status, 200);
  t.ok(await waitFor(() => srv.output().includes('"URI":"/api/v1/namespaces/default"')), 'the request is logged');
  const after = Date.now();
  const lines = srv.output().split('\n').filter(Boolean);
  const objects = lines.map((l) => {
    try {
      return JSON.parse(l);
    } catch {
      t.fail(`not a JSON line: ${l}`);
      return {};
    }
  });
  t.ok(objects.some((o) => /serving on https:/.test(o.msg)), 'the serving line');
  const http = objects.find((o) => o.msg === 'HTTP' && o.URI === '/api/v1/namespaces/default');
  if (!t.ok(http, 'a request line')) return;
  t.equal(http.verb, 'GET');
  t.equal(http.resp, 200);
  t.equal(http.userAgent, 'log-test/1.0');
  t.equal(http.v, 3);
  // a Go duration, as zap's StringDurationEncoder writes upstream's time.Duration
  t.match(http.latency, /^\d+(\.\d+)?(ns|µs|ms|s)$/);
  // Go's RemoteAddr: the address and the client's port
  t.match(http.srcIP, /^127\.0\.0\.1:\d+$/);
  // component-base's JSON logger (zap): ts is milliseconds since the epoch, a float64 written as a JSON
  // number; the line was written between the request and the look at the output (the leeway is the
  // logger's: its fine clock is kept within a millisecond below and two above Date.now())
  t.type(http.ts, 'number');
  t.ok(http.ts >= before - 1 && http.ts <= after + 2, `ts ${http.ts} is in milliseconds, between ${before} and ${after}`);
  const tsTexts = lines.map((l) => /^\{"ts":([^,]*),/.exec(l)?.[1]);
  t.same(
    tsTexts.filter((ts) => ts === undefined || !/^\d+(\.\d+)?$/.test(ts)),
    [],
    'every line starts with ts, a plain decimal number',
  );
  t.ok(
    tsTexts.some((ts) => ts!.includes('.')),
    'with the sub-millisecond fraction upstream has',
  );
});

/** The JSON request line of the request sent with Audit-ID `id` (undefined when none came). */
async function requestLine(srv: SpawnedServer, id: string): Promise<Record<string, unknown> | undefined> {
  const find = (): Record<string, unknown> | undefined => {
    for (const l of srv.output().split('\n')) {
      if (!l.includes(`"audit-ID":${JSON.stringify(id)}`)) continue;
      const o = JSON.parse(l) as Record<string, unknown>;
      if (o.msg === 'HTTP') return o;
    }
    return undefined;
  };
  return (await waitFor(() => find() !== undefined)) ? find() : undefined;
}

t.test("-v=3: the request line's verb is upstream's normalized verb (httplog's metrics.NormalizedVerb)", async (t) => {
  const srv = await spawnServer(tempDir(), await freePort(), ['--logging-format=json', '-v=3', '--workers=0']);
  t.teardown(() => srv.kill());
  const cm = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { k: 'v' } });
  t.equal((await srv.admin.post('/api/v1/namespaces/default/configmaps', cm('cm1'))).status, 201);
  const apply = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm1\ndata:\n  k: applied\n';
  // [what, method, path, body, content type, the verb upstream logs]
  const cases: [string, string, string, unknown, string | undefined, string][] = [
    ['a named object', 'GET', '/api/v1/namespaces/default/configmaps/cm1', undefined, undefined, 'GET'],
    ['a namespace object', 'GET', '/api/v1/namespaces/default', undefined, undefined, 'GET'],
    ['a namespaced collection', 'GET', '/api/v1/namespaces/default/configmaps', undefined, undefined, 'LIST'],
    ['a cluster-wide collection', 'GET', '/api/v1/configmaps', undefined, undefined, 'LIST'],
    ['HEAD of a collection', 'HEAD', '/api/v1/namespaces/default/configmaps', undefined, undefined, 'LIST'],
    ['a list narrowed to one name by its field selector (request info names it)', 'GET', '/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dcm1', undefined, undefined, 'GET'],
    ['a create', 'POST', '/api/v1/namespaces/default/configmaps', cm('cm2'), 'application/json', 'POST'],
    ['an update', 'PUT', '/api/v1/namespaces/default/configmaps/cm2', cm('cm2'), 'application/json', 'PUT'],
    ['a merge patch', 'PATCH', '/api/v1/namespaces/default/configmaps/cm2', { data: { k: 'm' } }, 'application/merge-patch+json', 'PATCH'],
    ['server-side apply', 'PATCH', '/api/v1/namespaces/default/configmaps/cm1?fieldManager=log-test', apply, 'application/apply-patch+yaml', 'APPLY'],
    ['apply with a parameter on its type (upstream compares the whole Content-Type)', 'PATCH', '/api/v1/namespaces/default/configmaps/cm1?fieldManager=log-test', apply, 'application/apply-patch+yaml; charset=utf-8', 'PATCH'],
    ['a delete', 'DELETE', '/api/v1/namespaces/default/configmaps/cm2', undefined, undefined, 'DELETE'],
    ['a collection delete', 'DELETE', '/api/v1/namespaces/default/configmaps?labelSelector=none%3Dnone', undefined, undefined, 'DELETE'],
    ['a connect subresource', 'GET', '/api/v1/namespaces/default/pods/none/log', undefined, undefined, 'CONNECT'],
    ['a connect subresource by POST', 'POST', '/api/v1/namespaces/default/pods/none/exec?command=true', undefined, undefined, 'CONNECT'],
    ['a non-resource path', 'GET', '/healthz', undefined, undefined, 'GET'],
    ['a non-resource path with a watch parameter (upstream looks at the parameter alone)', 'GET', '/version?watch=1', undefined, undefined, 'WATCH'],
    ['an OPTIONS request', 'OPTIONS', '/api/v1/namespaces/default/configmaps', undefined, undefined, 'OPTIONS'],
  ];
  for (const [i, [what, method, path, body, contentType, verb]] of cases.entries()) {
    const id = `verb-case-${i}`;
    await srv.admin.request(method, path, { headers: { 'audit-id': id }, ...(body === undefined ? {} : { body, contentType }) });
    const line = await requestLine(srv, id);
    if (t.ok(line, `${what}: logged`)) t.equal(line!.verb, verb, `${what}: ${method} ${path} is ${verb}`);
  }
  // watches: by the parameter WATCH; by the legacy /watch/ path without it LIST, as upstream's httplog has it
  for (const [what, path, verb] of [
    ['a watch', '/api/v1/namespaces/default/configmaps?watch=true', 'WATCH'],
    ['a watch of one object by its field selector', '/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=metadata.name%3Dcm1', 'WATCH'],
    ['a watch by the legacy path', '/api/v1/watch/namespaces/default/configmaps', 'LIST'],
  ] as const) {
    const id = `verb-${verb}-${path.length}`;
    const w = await srv.admin.stream(path, { headers: { 'audit-id': id } });
    t.equal(w.status, 200, `${what}: open`);
    t.ok(await w.next(), `${what}: an event`);
    w.close();
    const line = await requestLine(srv, id);
    if (t.ok(line, `${what}: logged`)) t.equal(line!.verb, verb, `${what}: ${verb}`);
  }
});

t.test("-v=3: srcIP is the client's address and port (Go's RemoteAddr); a watch is logged when it ends, with its whole latency", async (t) => {
  const srv = await spawnServer(tempDir(), await freePort(), ['--logging-format=json', '-v=3', '--workers=0']);
  t.teardown(() => srv.kill());
  const port = await new Promise<number>((resolve, reject) => {
    const req = httpsRequest(new URL('/api/v1/namespaces/default', srv.url), { headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'audit-id': 'src-ip' }, ca: srv.ca, agent: false }, (res) => {
      const local = res.socket.localPort!;
      res.resume();
      res.on('end', () => resolve(local));
    });
    req.on('error', reject);
    req.end();
  });
  const line = await requestLine(srv, 'src-ip');
  if (t.ok(line, 'logged')) t.equal(line!.srcIP, `127.0.0.1:${port}`, 'the address and the port the client connected from');

  // the watch is held open a while: its line comes after it closes, with a latency of at least that while
  const w = await srv.admin.stream('/api/v1/namespaces/default/configmaps?watch=true', { headers: { 'audit-id': 'long-watch' } });
  // the server had the request before its answer's headers came back
  const opened = performance.now();
  t.equal(w.status, 200);
  t.equal((await srv.admin.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'seen' } })).status, 201);
  for (let e = await w.next(); e; e = await w.next()) if (e.object?.metadata?.name === 'seen') break;
  await new Promise((r) => setTimeout(r, 300));
  t.notOk(srv.output().includes('"audit-ID":"long-watch"'), 'nothing is logged while the watch is open');
  const held = performance.now() - opened;
  w.close();
  const watchLine = await requestLine(srv, 'long-watch');
  if (!t.ok(watchLine, 'logged once closed')) return;
  t.equal(watchLine!.resp, 200);
  const latency = String(watchLine!.latency);
  const m = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(latency);
  if (t.ok(m, `latency ${latency} in ms or s`)) {
    const ms = Number(m![1]) * (m![2] === 's' ? 1000 : 1);
    t.ok(ms >= held, `the latency (${latency}) covers the time the watch was open (${held.toFixed(1)} ms from its headers to its close)`);
  }
});

t.test('-v=3: the request line carries the audit ID its answer carries, the client\'s or a generated one', async (t) => {
  const dir = tempDir();
  const srv = await spawnServer(dir, await freePort(), ['-v=3', '--workers=0']);
  t.teardown(() => srv.kill());
  /** The audit-ID of the one request line for `uri` (text format: `"HTTP" verb="GET" URI="..." ... audit-ID="..."`). */
  const loggedID = async (uri: string): Promise<string | undefined> => {
    const line = (): string | undefined => srv.output().split('\n').find((l) => l.includes(' "HTTP" ') && l.includes(` URI=${JSON.stringify(uri)} `));
    if (!(await waitFor(() => line() !== undefined))) return undefined;
    return /audit-ID="([^"]*)"/.exec(line()!)?.[1];
  };
  const chosen = await srv.admin.get('/api/v1/namespaces/default?log=chosen', { headers: { 'Audit-ID': 'client-chosen-audit-id-1' } });
  t.equal(chosen.headers['audit-id'], 'client-chosen-audit-id-1');
  t.equal(await loggedID('/api/v1/namespaces/default?log=chosen'), 'client-chosen-audit-id-1', "the client's ID");
  const made = await srv.admin.get('/api/v1/namespaces/default?log=made');
  const madeID = made.headers['audit-id'] as string;
  t.match(madeID, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a generated UUID in the answer');
  t.equal(await loggedID('/api/v1/namespaces/default?log=made'), madeID, 'the same generated ID in the log');
  const failed = await srv.admin.get('/api/v1/namespaces/default/configmaps/none?log=failed');
  t.equal(failed.status, 404);
  t.equal(await loggedID('/api/v1/namespaces/default/configmaps/none?log=failed'), failed.headers['audit-id'], 'on a failed request too');
  // upstream logs the first 64 characters of a longer one (GetAuditIDTruncated); the answer carries it whole
  const long = 'x'.repeat(40) + 'y'.repeat(40);
  const longR = await srv.admin.get('/api/v1/namespaces/default?log=long', { headers: { 'Audit-ID': long } });
  t.equal(longR.headers['audit-id'], long);
  t.equal(await loggedID('/api/v1/namespaces/default?log=long'), long.slice(0, 64), 'a long ID cut to 64 characters, as upstream');
  // URI is the request target as sent (Go's RequestURI): escapes kept
  const escaped = await srv.admin.get('/api/v1/namespaces/d%65fault?log=escaped', { headers: { 'Audit-ID': 'escaped-uri' } });
  t.equal(escaped.status, 200);
  t.equal(await loggedID('/api/v1/namespaces/d%65fault?log=escaped'), 'escaped-uri', 'the line names the URI as sent');
});

t.test('at the default verbosity no request is logged, and deprecated flags and GA gates warn at start', async (t) => {
  const dir = tempDir();
  const srv = await spawnServer(dir, await freePort(), ['--workers=0', '--service-account-api-audiences=https://aud.example', '--feature-gates=ServerSideApply=true']);
  t.teardown(() => srv.kill());
  for (let i = 0; i < 3; i++) t.equal((await srv.admin.get('/api/v1/namespaces')).status, 200);
  await new Promise((res) => setTimeout(res, 200));
  const out = srv.output();
  t.notMatch(out, /"HTTP"/);
  t.match(out, /^W\d{4} .*"Flag --service-account-api-audiences has been deprecated, use --api-audiences"/m);
  t.match(out, /"Setting GA feature gate ServerSideApply=true\. It will be removed in a future release\."/);
});

function runToExit(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [binPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() });
    let out = '';
    p.stdout!.on('data', (c: Buffer) => (out += c));
    p.stderr!.on('data', (c: Buffer) => (out += c));
    p.on('exit', (code) => resolve({ code, out }));
  });
}

t.test('bad logging flags, hidden-metrics versions and locked GA gates are start errors', async (t) => {
  const dir = tempDir();
  const cases: [string[], RegExp][] = [
    [['--logging-format=xml'], /--logging-format: Unsupported value: permitted formats: "text", "json"/],
    [['-v=-1'], /-v must be 0 or more/],
    [['--show-hidden-metrics-for-version=1.29'], /must be omitted or have the value '1\.31'/],
    [['--feature-gates=ServerSideApply=false'], /cannot set feature gate ServerSideApply to false, feature is locked to true/],
  ];
  for (const [flags, msg] of cases) {
    const r = await runToExit([`--data-dir=${dir}`, '--secure-port=0', ...flags]);
    t.equal(r.code, 2, flags.join(' '));
    t.match(r.out, msg);
  }
});
