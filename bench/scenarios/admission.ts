/**
 * The cost of admission: CREATE ConfigMaps against a server with one validating webhook (a loopback
 * HTTPS webhook process that allows, reached over keep-alive) and against one with a
 * ValidatingAdmissionPolicy of three rules, each beside the same server without admission, in the same
 * run; GET of one ConfigMap on the webhook server shows reads never pay for admission. The servers
 * run side by side and the loads alternate between them (three rounds) so drift hits all alike (GET is
 * measured on one server, its webhook configuration removed and put back between rounds); the
 * ratios are the medians of the rounds' ratios, with each server's CPU time per request beside them.
 */
import { AUTH as auth, cpuSeconds, type LoadResult, load, median, type Mode, type Proc, SetupClient, startAdmissionWebhook, startApiServer, WARMUP_SECONDS } from '../lib.js';

export interface AdmissionRow {
  scenario: string;
  mode: string;
  plain: LoadResult;
  admitted: LoadResult;
  plainCpuUs: number;
  admittedCpuUs: number;
  /** Admitted rate as a share of the plain one (median of the rounds' ratios), in percent. */
  ratio: number;
  target: number;
}

export const WEBHOOK_CONFIG = (url: string, ca: string) => ({
  metadata: { name: 'bench' },
  webhooks: [
    {
      name: 'allow.bench.example.com',
      clientConfig: { url: `${url}/allow`, caBundle: Buffer.from(ca).toString('base64') },
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
    },
  ],
});

export const POLICY = {
  metadata: { name: 'bench-policy' },
  spec: {
    failurePolicy: 'Fail',
    matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }] },
    validations: [
      { expression: 'object.metadata.name.size() < 200' },
      { expression: '!has(object.data) || object.data.size() < 100' },
      { expression: "!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)" },
    ],
  },
};
export const BINDING = { metadata: { name: 'bench-policy' }, spec: { policyName: 'bench-policy', validationActions: ['Deny'] } };

async function measured(s: Proc, duration: number, run: (s: Proc) => Promise<LoadResult>): Promise<{ r: LoadResult; cpuUs: number }> {
  const before = cpuSeconds(s.proc.pid!);
  const r = await run(s);
  const requests = Math.max(1, r.rps * (duration + WARMUP_SECONDS));
  return { r, cpuUs: ((cpuSeconds(s.proc.pid!) - before) * 1e6) / requests };
}

const mean = (rs: LoadResult[]): LoadResult => ({
  rps: rs.reduce((a, r) => a + r.rps, 0) / rs.length,
  p50: rs.reduce((a, r) => a + r.p50, 0) / rs.length,
  p99: rs.reduce((a, r) => a + r.p99, 0) / rs.length,
  errors: rs.reduce((a, r) => a + r.errors, 0),
  non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
});

export async function admissionCost(mode: Mode, duration: number): Promise<AdmissionRow[]> {
  const plain = await startApiServer(mode.flags);
  const withWebhook = await startApiServer(mode.flags);
  const withPolicy = await startApiServer(mode.flags);
  let hook: Proc | undefined;
  try {
    for (const s of [plain, withWebhook, withPolicy]) {
      const c = new SetupClient(s.url, s.ca);
      await c.send('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'bench-get' }, data: { key: 'value' } });
      if (s === withWebhook) hook = await configureAdmission(c, 'webhook', s.dir, s.ca);
      if (s === withPolicy) await configureAdmission(c, 'policy', s.dir, s.ca);
      c.close();
    }
    const body = JSON.stringify({ metadata: { generateName: 'cm-', labels: { app: 'bench' } }, data: { key: 'value', other: 'x'.repeat(64) } });
    const create = (s: Proc) =>
      load({ url: `${s.url}/api/v1/namespaces/default/configmaps`, method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body, duration, connections: 64, tlsOptions: { ca: s.ca } });
    const get = (s: Proc) => load({ url: `${s.url}/api/v1/namespaces/default/configmaps/bench-get`, headers: auth, duration, tlsOptions: { ca: s.ca } });
    const rows: AdmissionRow[] = [];
    // GET on one server, its webhook configuration removed and put back between rounds: two servers
    // on two shared cores differ by placement more than by anything admission could cost a read
    {
      const c = new SetupClient(withWebhook.url, withWebhook.ca);
      const vwc = '/apis/admissionregistration.svc.io/v1/validatingwebhookconfigurations';
      const p: { r: LoadResult; cpuUs: number }[] = [];
      const a: { r: LoadResult; cpuUs: number }[] = [];
      for (let round = 0; round < 3; round++) {
        await c.send('DELETE', `${vwc}/bench`);
        p.push(await measured(withWebhook, duration, get));
        await c.send('POST', vwc, WEBHOOK_CONFIG(hook!.url, withWebhook.ca));
        a.push(await measured(withWebhook, duration, get));
      }
      c.close();
      const cpu = (xs: { cpuUs: number }[]) => xs.reduce((t, x) => t + x.cpuUs, 0) / xs.length;
      rows.push({
        scenario: 'GET one ConfigMap, without / with a webhook on CREATE (one server)',
        mode: mode.name,
        plain: mean(p.map((x) => x.r)),
        admitted: mean(a.map((x) => x.r)),
        plainCpuUs: cpu(p),
        admittedCpuUs: cpu(a),
        ratio: median(a.map((x, i) => (100 * x.r.rps) / p[i]!.r.rps)),
        target: 97,
      });
    }
    for (const [scenario, admitted, run, target] of [
      ['CREATE ConfigMap (durable), one validating webhook', withWebhook, create, 70],
      ['CREATE ConfigMap (durable), a policy of three rules', withPolicy, create, 90],
    ] as const) {
      const p: { r: LoadResult; cpuUs: number }[] = [];
      const a: { r: LoadResult; cpuUs: number }[] = [];
      for (let round = 0; round < 3; round++) {
        p.push(await measured(plain, duration, run));
        a.push(await measured(admitted, duration, run));
      }
      const cpu = (xs: { cpuUs: number }[]) => xs.reduce((t, x) => t + x.cpuUs, 0) / xs.length;
      rows.push({
        scenario,
        mode: mode.name,
        plain: mean(p.map((x) => x.r)),
        admitted: mean(a.map((x) => x.r)),
        plainCpuUs: cpu(p),
        admittedCpuUs: cpu(a),
        ratio: median(a.map((x, i) => (100 * x.r.rps) / p[i]!.r.rps)),
        target,
      });
    }
    return rows;
  } finally {
    await hook?.stop();
    await plain.stop();
    await withWebhook.stop();
    await withPolicy.stop();
  }
}

/** Configures on a server what a scenario measures: one allowing webhook (its process returned, to stop) or the policy and its binding. */
export async function configureAdmission(c: SetupClient, mode: 'webhook' | 'policy', dir: string, ca: string): Promise<Proc | undefined> {
  if (mode === 'webhook') {
    const hook = await startAdmissionWebhook(dir);
    const r = await c.send('POST', '/apis/admissionregistration.svc.io/v1/validatingwebhookconfigurations', WEBHOOK_CONFIG(hook.url, ca));
    if (r.status !== 201) throw new Error(`webhook configuration: ${r.status} ${r.text}`);
    return hook;
  }
  const p = await c.send('POST', '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicies', POLICY);
  const b = await c.send('POST', '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicybindings', BINDING);
  if (p.status !== 201 || b.status !== 201) throw new Error(`policy: ${p.status} ${p.text}; binding: ${b.status} ${b.text}`);
  return undefined;
}
