import t from 'tap';
import { spawn } from 'node:child_process';
import { binPath, freePort, spawnServer, tempDir } from '../helpers/server.js';

t.test('--logging-format=json: every line is a JSON object, and -v=3 logs each request as upstream', async (t) => {
  const dir = tempDir();
  const srv = await spawnServer(dir, await freePort(), ['--logging-format=json', '-v=3', '--workers=0']);
  t.teardown(() => srv.kill());
  const r = await srv.admin.get('/api/v1/namespaces/default', { headers: { 'user-agent': 'log-test/1.0' } });
  t.equal(r.status, 200);
  await new Promise((res) => setTimeout(res, 200));
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
  t.type(http.ts, 'number');
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
