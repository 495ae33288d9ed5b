import t from 'tap';
import { spawn } from 'node:child_process';
import { binPath, freePort, spawnServer, tempDir } from '../helpers/server.js';
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
  t.match(http.latency, /^\d+\.\d{3}ms$/);
  t.equal(http.srcIP, '127.0.0.1');
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
    const p = spawn(process.execPath, [binPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
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
