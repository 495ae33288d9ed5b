/**
 * Health endpoints /livez, /readyz, /healthz: 200 when healthy, `?verbose` check lines, `?exclude`,
 * per-check paths, and readiness failing (shutdown check) while the server shuts down.
 *
 * Note: the spec (and the upstream documentation it follows) says verbose output ends with
 * `healthz check passed` on every endpoint; upstream's code prints `<endpoint> check passed`. These
 * tests follow the spec; see /work/notes/issue2-findings.md.
 */
import t from 'tap';
import { type TestServer } from '../helpers/server.js';
import { startSeeded } from '../helpers/fixtures.js';

let s: TestServer;
t.before(async () => {
  s = await startSeeded();
});
t.teardown(() => s?.stop());

const endpoints = ['livez', 'readyz', 'healthz'] as const;

// spec rule 4's names, and upstream's post-start hook names for what this server starts the same way
// (storage-readiness, start-apiserver-admission-initializer, start-system-namespaces-controller,
// priority-and-fairness-filter, priority-and-fairness-config-producer); the other hooks are this server's own (worker pool, namespace, garbage
// collector and event TTL controllers, compactor), which upstream's API server does not start
const CHECKS = [
  'ping',
  'log',
  'store',
  'poststarthook/storage-readiness',
  'poststarthook/start-worker-pool',
  'poststarthook/start-apiserver-admission-initializer',
  'poststarthook/start-system-namespaces-controller',
  'poststarthook/rbac/bootstrap-roles',
  'poststarthook/priority-and-fairness-filter',
  'poststarthook/priority-and-fairness-config-producer',
  // the aggregator's, upstream's names (its start-up writes, as the two before, come before admission)
  'poststarthook/start-kube-aggregator-informers',
  'poststarthook/apiservice-registration-controller',
  'poststarthook/kube-apiserver-autoregistration',
  'poststarthook/apiservice-status-available-controller',
  'poststarthook/start-cluster-authentication-info-controller',
  'poststarthook/start-namespace-controller',
  'poststarthook/start-clusterrole-aggregation-controller',
  'poststarthook/start-serviceaccount-controller',
  'poststarthook/start-resourcequota-controller',
  'poststarthook/start-certificatesigningrequest-signing-controller',
  'poststarthook/start-certificatesigningrequest-approving-controller',
  'poststarthook/start-certificatesigningrequest-cleaner-controller',
  'poststarthook/start-garbage-collector-controller',
  'poststarthook/start-apiextensions-controllers',
  'poststarthook/crd-informer-synced',
  'poststarthook/start-event-ttl-controller',
  'poststarthook/start-compactor',
  'autoregister-completion',
];
const expectedChecks = { livez: CHECKS, healthz: CHECKS, readyz: [...CHECKS, 'shutdown'] };

for (const ep of endpoints) {
  t.test(`/${ep}?verbose lists exactly the expected checks, in order`, async (t) => {
    const r = await s.admin.get(`/${ep}?verbose`);
    t.equal(r.status, 200);
    const names = r.text.trimEnd().split('\n').slice(0, -1).map((l) => l.slice(3, -3));
    t.same(names, expectedChecks[ep]);
  });
}

for (const ep of endpoints) {
  t.test(`/${ep}`, async (t) => {
    t.test('200 "ok" when healthy, plain text', async (t) => {
      const r = await s.admin.get(`/${ep}`);
      t.equal(r.status, 200);
      t.equal(r.text, 'ok');
      t.match(r.headers['content-type'] ?? '', /^text\/plain; charset=utf-8/);
      t.equal(r.headers['x-content-type-options'], 'nosniff');
    });

    t.test('anonymous callers may read it (AlwaysAllow)', async (t) => {
      const r = await s.anon.get(`/${ep}`);
      t.equal(r.status, 200);
      t.equal(r.text, 'ok');
    });

    t.test('?verbose lists every check as [+]<name> ok and ends with the passed line', async (t) => {
      const r = await s.admin.get(`/${ep}?verbose`);
      t.equal(r.status, 200);
      const lines = r.text.trimEnd().split('\n');
      t.equal(lines.at(-1), 'healthz check passed', 'last line');
      const checks = lines.slice(0, -1);
      t.ok(checks.length >= 4, 'several checks');
      for (const l of checks) t.match(l, /^\[\+\][^ ]+ ok$/, `check line ${JSON.stringify(l)}`);
      const names = checks.map((l) => l.slice(3, -3));
      for (const n of ['ping', 'log', 'store']) t.ok(names.includes(n), `${n} check present`);
      t.ok(
        names.some((n) => n.startsWith('poststarthook/')),
        'poststarthook/<name> checks present',
      );
      if (ep === 'readyz') t.ok(names.includes('shutdown'), 'readiness has the shutdown check');
      else t.notOk(names.includes('shutdown'), `${ep} has no shutdown check`);
      t.equal(new Set(names).size, names.length, 'no check listed twice');
      t.ok(r.text.endsWith('\n'), 'ends with a newline');
    });

    t.test('?verbose=true is the same as ?verbose', async (t) => {
      const a = await s.admin.get(`/${ep}?verbose`);
      const b = await s.admin.get(`/${ep}?verbose=true`);
      t.equal(b.text, a.text);
    });

    t.test('?exclude=<check> skips it: [+]<check> excluded: ok', async (t) => {
      const r = await s.admin.get(`/${ep}?verbose&exclude=store`);
      t.equal(r.status, 200);
      const lines = r.text.trimEnd().split('\n');
      t.ok(lines.includes('[+]store excluded: ok'), 'store shown as excluded');
      t.notOk(lines.includes('[+]store ok'), 'store not run');
      t.ok(lines.includes('[+]ping ok'), 'other checks still run');
      t.equal(lines.at(-1), 'healthz check passed');
    });

    t.test('several exclusions combine', async (t) => {
      const r = await s.admin.get(`/${ep}?verbose&exclude=ping&exclude=log`);
      const lines = r.text.split('\n');
      t.ok(lines.includes('[+]ping excluded: ok'));
      t.ok(lines.includes('[+]log excluded: ok'));
    });

    t.test('?exclude without ?verbose answers plain "ok"', async (t) => {
      const r = await s.admin.get(`/${ep}?exclude=store`);
      t.equal(r.status, 200);
      t.equal(r.text, 'ok');
    });

    t.test('excluding an unknown check warns in verbose output and still passes', async (t) => {
      const r = await s.admin.get(`/${ep}?verbose&exclude=nope`);
      t.equal(r.status, 200);
      t.ok(r.text.includes('warn: some health checks cannot be excluded: no matches for "nope"\n'), r.text);
    });

    t.test('per-check path /<endpoint>/<check> answers 200 ok', async (t) => {
      const v = await s.admin.get(`/${ep}?verbose`);
      const names = v.text
        .trimEnd()
        .split('\n')
        .slice(0, -1)
        .map((l) => l.slice(3, -3));
      for (const n of names) {
        const r = await s.admin.get(`/${ep}/${n}`);
        t.equal(r.status, 200, `/${ep}/${n}`);
        t.equal(r.text, 'ok', `/${ep}/${n} body`);
      }
    });

    t.test('an unknown per-check path is 404', async (t) => {
      const r = await s.admin.get(`/${ep}/no-such-check`);
      t.equal(r.status, 404);
    });
  });
}

t.test('readiness fails during graceful shutdown while liveness stays ok', async (t) => {
  const s2 = await startSeeded(['--shutdown-delay-duration=1500ms']);
  const ready = await s2.admin.get('/readyz');
  t.equal(ready.status, 200, 'ready before shutdown');
  const stopping = s2.stop();
  await new Promise((r) => setTimeout(r, 200));
  const r = await s2.admin.get('/readyz?verbose');
  t.equal(r.status, 500, 'readyz is 500 once shutdown starts');
  t.ok(r.text.includes('[-]shutdown failed: reason withheld'), `shutdown check failed (${r.text})`);
  t.match(r.text, /check failed\n?$/, 'ends with the failed line');
  const one = await s2.admin.get('/readyz/shutdown');
  t.equal(one.status, 500, '/readyz/shutdown is 500');
  const live = await s2.admin.get('/livez');
  t.equal(live.status, 200, 'livez still ok during the shutdown delay');
  const excluded = await s2.admin.get('/readyz?exclude=shutdown');
  t.equal(excluded.status, 200, 'readyz with the shutdown check excluded is ok');
  await stopping;
});
