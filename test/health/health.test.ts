import t from 'tap';
import { Health } from '../../core/health/health.js';

const q = (s = '') => new URLSearchParams(s);

t.test('a post-start hook that has not finished fails /livez, unless the livez grace period is running', async (t) => {
  const never = new Promise<void>(() => undefined);
  const strict = new Health(0);
  strict.addPostStartHook('slow', never);
  t.equal((await strict.run('livez', '', q())).code, 500);
  const lenient = new Health(60_000);
  lenient.addPostStartHook('slow', never);
  t.equal((await lenient.run('livez', '', q())).code, 200, 'forgiven on /livez during the grace period');
  t.equal((await lenient.run('livez', 'poststarthook/slow', q())).code, 200);
  t.equal((await lenient.run('readyz', '', q())).code, 500, 'readiness is not forgiven');
});

t.test('verbose output lists every check and ends with the verdict; exclude and unknown excludes', async (t) => {
  const h = new Health();
  h.add({ name: 'ping', check: () => undefined });
  h.add({ name: 'bad', check: () => 'broken' });
  const v = await h.run('healthz', '', q('verbose&exclude=bad&exclude=nope'));
  t.equal(v.code, 200);
  t.equal(v.body, '[+]ping ok\n[+]bad excluded: ok\nwarn: some health checks cannot be excluded: no matches for "nope"\nhealthz check passed\n');
  const f = await h.run('healthz', '', q());
  t.equal(f.code, 500);
  t.match(f.body, /\[-\]bad failed: reason withheld\nhealthz check failed\n$/);
  t.equal((await h.run('healthz', 'nope', q())).code, 404, 'an unknown per-check path is 404');
});

t.test('a boot-sequence check fails every endpoint until startup is done, but is forgiven on /livez during the grace period', async (t) => {
  let missing = 'missing APIService: [v1.storage.svc.io]';
  const strict = new Health(0);
  strict.addBootSequenceCheck({ name: 'autoregister-completion', check: () => missing || undefined });
  for (const ep of ['livez', 'readyz', 'healthz'] as const) t.equal((await strict.run(ep, '', q())).code, 500, `${ep} fails while incomplete`);
  const lenient = new Health(60_000);
  lenient.addBootSequenceCheck({ name: 'autoregister-completion', check: () => missing || undefined });
  t.equal((await lenient.run('livez', '', q())).code, 200, 'forgiven on /livez during the grace period');
  t.equal((await lenient.run('readyz', '', q())).code, 500, 'never forgiven on /readyz');
  missing = '';
  for (const ep of ['livez', 'readyz', 'healthz'] as const) t.equal((await strict.run(ep, '', q())).code, 200, `${ep} passes once complete`);
});
