/**
 * --authorization-config: a Node authorizer and two real HTTPS webhooks (a "gate" with match
 * conditions and a "fallback"), failure policies within the timeout, a hanging webhook that holds
 * only its own requests, reloads (good and bad), and the start errors of bad configurations,
 * policy files and flag combinations.
 */
import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseFlags } from '../../core/server/options.js';
import { ApiServer } from '../../core/server/server.js';
import { issueClientCert } from '../../core/server/certs.js';
import { Client } from '../helpers/client.js';
import { ALICE_TOKEN, binPath, childEnv } from '../helpers/server.js';
import { expectStatus, startSeeded, tmp } from '../helpers/fixtures.js';
import { AuthzWebhook, eventually } from '../helpers/authz-webhook.js';

const dir = tmp('svc-authz-cfg-');
const ns = (n: string) => `/api/v1/namespaces/${n}/configmaps`;

interface GateOptions {
  failurePolicy: 'Deny' | 'NoOpinion';
  timeout?: string;
}

function configText(gateKc: string, fallbackKc: string, g: GateOptions): string {
  return `apiVersion: apiserver.config.svc.io/v1
kind: AuthorizationConfiguration
authorizers:
- type: Node
  name: node
- type: Webhook
  name: gate
  webhook:
    timeout: ${g.timeout ?? '3s'}
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: ${g.failurePolicy}
    connectionInfo:
      type: KubeConfigFile
      kubeConfigFile: ${gateKc}
    matchConditions:
    - expression: has(request.resourceAttributes)
    - expression: request.resourceAttributes.namespace.startsWith("guarded")
    - expression: request.resourceAttributes.namespace != "guarded-broken" || request.extra["team"][0] == "x"
- type: Webhook
  name: fallback
  webhook:
    timeout: 3s
    subjectAccessReviewVersion: v1beta1
    failurePolicy: NoOpinion
    connectionInfo:
      type: KubeConfigFile
      kubeConfigFile: ${fallbackKc}
`;
}

t.test('--authorization-config with Node and two webhooks', async (t) => {
  const gate = await AuthzWebhook.start();
  const fallback = await AuthzWebhook.start('/fallback');
  const configPath = join(dir, 'authz.yaml');
  const write = (g: GateOptions) => writeFileSync(configPath, configText(gate.kubeconfig(), fallback.kubeconfig(), g));
  write({ failurePolicy: 'Deny' });

  const logs: string[] = [];
  const { log, error } = console;
  console.log = (...a: unknown[]) => void logs.push(a.join(' '));
  console.error = (...a: unknown[]) => void logs.push(a.join(' '));
  const s = await startSeeded([`--authorization-config=${configPath}`]);
  const alice = s.admin.with({ token: ALICE_TOKEN });
  t.teardown(async () => {
    console.log = log;
    console.error = error;
    alice.close();
    await s.stop();
    await gate.stop();
    await fallback.stop();
  });
  for (const n of ['open', 'guarded', 'guarded-broken']) await s.admin.post('/api/v1/namespaces', { metadata: { name: n } });

  t.test('match conditions false: the gate is skipped and the next webhook decides', async (t) => {
    const before = gate.count;
    t.equal((await alice.get(`${ns('open')}/x`)).status, 404);
    t.equal((await alice.get('/version')).status, 200, 'a non-resource request fails has(request.resourceAttributes)');
    t.equal(gate.count, before, 'the gate was not called');
    t.equal(fallback.received.at(-1)!.body.apiVersion, 'authorization.svc.io/v1beta1', 'each webhook speaks its own version');
  });

  t.test('match conditions all true: the gate is called and its denial decides', async (t) => {
    gate.answer = () => ({ status: { allowed: false, denied: true, reason: 'guarded' } });
    const before = gate.count;
    expectStatus(t, await alice.get(`${ns('guarded')}/x`), 403, 'Forbidden', /: guarded$/);
    t.equal(gate.count, before + 1);
    t.equal(gate.received.at(-1)!.body.apiVersion, 'authorization.svc.io/v1');
  });

  t.test('an answer within the timeout is used', async (t) => {
    gate.answer = () => ({ delayMs: 200, then: { status: { allowed: true } } });
    t.equal((await alice.get(`${ns('guarded')}/slow`)).status, 404);
  });

  t.test('a match condition that errors (no false): failurePolicy Deny fails the request', async (t) => {
    const before = gate.count;
    const r = await alice.get(`${ns('guarded-broken')}/x`);
    expectStatus(t, r, 500, 'InternalError', /^Internal error occurred: cel evaluation error: expression 'request\.resourceAttributes\.namespace != "guarded-broken" \|\| request\.extra\["team"\]\[0\] == "x"' resulted in error: /);
    t.equal(gate.count, before, 'the webhook was not called');
  });

  t.test('a hanging gate: its request fails by the Deny policy within the timeout; other requests are served meanwhile', async (t) => {
    gate.answer = () => ({ hang: true });
    const before = gate.count;
    let settled = false;
    const hanging = alice.get(`${ns('guarded')}/hang`).finally(() => (settled = true));
    await eventually(() => gate.count > before);
    t.equal((await alice.get(`${ns('open')}/meanwhile`)).status, 404, 'a request the gate skips');
    t.equal((await s.admin.get(`${ns('guarded')}?limit=1`)).status, 200, 'a system:masters request');
    t.notOk(settled, 'the hanging request was still waiting while the others were answered');
    const r = await hanging;
    expectStatus(t, r, 500, 'InternalError', /^Internal error occurred: Post "https:\/\/127\.0\.0\.1:\d+\/authorize": context deadline exceeded \(timeout 3000ms\)$/);
  });

  t.test('Node decides for nodes before any webhook', async (t) => {
    const node = new Client({ url: s.url, ca: s.ca, ...issueClientCert(s.dataDir, 'system:node:n1', ['system:nodes']) });
    t.teardown(() => node.close());
    const gateBefore = gate.count;
    const fbBefore = fallback.count;
    t.equal((await node.get('/apis/coordination.svc.io/v1/namespaces/svc-node-lease/leases/n1')).status, 404, 'its own lease: allowed');
    t.same([gate.count, fallback.count], [gateBefore, fbBefore]);
  });

  t.test('a changed file is reloaded: failurePolicy NoOpinion lets the fallback allow what the hanging gate cannot answer', async (t) => {
    write({ failurePolicy: 'NoOpinion', timeout: '1s' });
    await eventually(() => logs.some((l) => l.includes(`authorization config ${configPath} reloaded`)));
    gate.answer = () => ({ hang: true });
    t.equal((await alice.get(`${ns('guarded')}/after-reload`)).status, 404, 'the gate failed without opinion, the fallback allowed');
  });

  const bad: [string, string, RegExp][] = [
    ['a timeout over the limit', configText(gate.kubeconfig(), fallback.kubeconfig(), { failurePolicy: 'Deny', timeout: '45s' }), /authorizers\[1\]\.webhook\.timeout: Invalid value: "45s": must be > 0s and <= 30s/],
    ['a file that is not YAML', 'authorizers: [\n', /error converting YAML to JSON/],
    ['an expression that does not compile', configText(gate.kubeconfig(), fallback.kubeconfig(), { failurePolicy: 'Deny' }).replace('request.resourceAttributes.namespace.startsWith', 'request.resourceAttributes.ns.startsWith'), /authorizers\[1\]\.webhook\.matchConditions\[1\]\.expression: Invalid value: .*undefined field 'ns'/],
  ];
  for (const [rule, text, message] of bad) {
    t.test(`a bad reload (${rule}) keeps the last good configuration and says so in the log`, async (t) => {
      writeFileSync(configPath, text);
      await eventually(() => logs.some((l) => l.includes('keeping the last good configuration') && message.test(l)));
      gate.answer = () => ({ hang: true });
      t.equal((await alice.get(`${ns('guarded')}/${logs.length}`)).status, 404, 'still NoOpinion with a 1s timeout: the fallback allows');
    });
  }
});

const webhookKc = () => {
  const d = tmp('svc-kc-');
  const p = join(d, 'kc');
  writeFileSync(p, 'clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1/\n');
  return p;
};

t.test('giving both --authorization-config and a legacy authorization flag is a start error', async (t) => {
  const want = '--authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined';
  for (const flag of ['--authorization-mode=Node', '--authorization-webhook-version=v1', '--authorization-webhook-cache-authorized-ttl=1m', `--authorization-webhook-config-file=${webhookKc()}`]) {
    t.throws(() => parseFlags(['--authorization-config=/x.yaml', flag]), { message: want }, flag);
  }
  t.doesNotThrow(() => parseFlags(['--authorization-config=/x.yaml']), 'the default mode list does not count as given');
});

t.test('the legacy flags are checked as upstream checks them', async (t) => {
  const rows: [string[], string][] = [
    [['--authorization-mode='], 'at least one authorization-mode must be passed'],
    [['--authorization-mode=Foo'], 'authorization-mode "Foo" is not a valid mode'],
    [['--authorization-mode=Node,Node'], 'authorization-mode "Node" has mode specified more than once'],
    [['--authorization-mode=ABAC'], "authorization-mode ABAC's authorization policy file not passed"],
    [['--authorization-policy-file=/p'], 'cannot specify --authorization-policy-file without mode ABAC'],
    [['--authorization-mode=Webhook'], "authorization-mode Webhook's authorization config file not passed"],
    [['--authorization-webhook-config-file=/k'], 'cannot specify --authorization-webhook-config-file without mode Webhook'],
    [['--authorization-webhook-version=v2'], '--authorization-webhook-version: unsupported value "v2": supported values: "v1", "v1beta1"'],
  ];
  for (const [flags, want] of rows) t.throws(() => parseFlags(flags), { message: want }, flags.join(' '));
});

const bin = (args: string[]): Promise<{ code: number; out: string }> =>
  new Promise((resolve) => {
    execFile(process.execPath, [binPath, `--data-dir=${join(dir, 'never-created')}`, '--secure-port=0', ...args], { env: childEnv(), timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` });
    });
  });

t.test('the binary refuses to start on a bad authorization setup, naming the line or field', async (t) => {
  const policy = join(dir, 'policy.jsonl');
  writeFileSync(policy, '{"apiVersion":"abac.authorization.svc.io/v1beta1","kind":"Policy","spec":{"user":"a"}}\n{"user": "b",\n');
  const config = join(dir, 'bad-authz.yaml');
  writeFileSync(config, 'apiVersion: apiserver.config.svc.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- type: Webhook\n  name: w\n  webhook: {}\n');
  const rows: [string, string[], string][] = [
    ['both flags', ['--authorization-config=/x.yaml', '--authorization-mode=RBAC'], 'Error: --authorization-config can not be specified when --authorization-mode or --authorization-webhook-* flags are defined'],
    ['a malformed policy file', ['--authorization-mode=ABAC', `--authorization-policy-file=${policy}`], `Error: error reading policy file ${policy}, line 2: {"user": "b",: unexpected end of JSON input`],
    [
      'an invalid configuration file',
      [`--authorization-config=${config}`],
      `Error: --authorization-config ${config}: [authorizers[0].webhook.timeout: Required value, authorizers[0].webhook.subjectAccessReviewVersion: Required value, authorizers[0].webhook.failurePolicy: Required value, authorizers[0].webhook.connectionInfo.type: Required value]`,
    ],
  ];
  for (const [rule, args, want] of rows) {
    const r = await bin(args);
    t.equal(r.code, 2, `${rule}: exit code 2`);
    t.ok(r.out.includes(want), `${rule}: ${want} (got ${r.out.slice(0, 400)})`);
    t.notOk(r.out.includes('serving on'), `${rule}: nothing served`);
  }
  t.notOk(existsSync(join(dir, 'never-created')), 'the data directory was not even created');
});

t.test('missing authorization files stop the start before anything is opened', async (t) => {
  const rows: [string[], string][] = [
    [['--authorization-config=/no/such/authz.yaml'], '--authorization-config /no/such/authz.yaml: failed to read file at "/no/such/authz.yaml": ENOENT: no such file or directory, open \'/no/such/authz.yaml\''],
    [['--authorization-mode=Webhook', '--authorization-webhook-config-file=/no/such/kc'], "unable to read webhook configuration file \"/no/such/kc\": ENOENT: no such file or directory, open '/no/such/kc'"],
    [['--authorization-mode=ABAC', '--authorization-policy-file=/no/such/policy'], "error reading policy file /no/such/policy: ENOENT: no such file or directory, open '/no/such/policy'"],
  ];
  for (const [flags, want] of rows) {
    const dataDir = join(dir, `unused-${flags.length}-${want.length}`);
    const server = new ApiServer(parseFlags([`--data-dir=${dataDir}`, '--secure-port=0', ...flags]));
    await t.rejects(server.start(() => {
      throw new Error('not reached');
    }), { name: 'Error', message: want }, flags.join(' '));
    t.notOk(existsSync(dataDir), 'nothing created');
  }
});
