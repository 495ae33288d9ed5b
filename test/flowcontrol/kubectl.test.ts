/**
 * kubectl (v1.32, at /usr/bin/kubectl) against the real binary: the flowcontrol kinds under upstream's
 * group name, their tables with upstream's columns, and `kubectl apply` of an upstream manifest.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { tmp } from '../helpers/fixtures.js';
import { kubectlRunner } from '../helpers/kubectl.js';
import { freePort, spawnServer } from '../helpers/server.js';

t.test('kubectl gets, describes and applies FlowSchemas and PriorityLevelConfigurations', async (t) => {
  const home = tmp('svc-apf-kubectl-');
  mkdirSync(join(home, 'cache'), { recursive: true });
  const dataDir = tmp('svc-apf-kubectl-data-');
  const srv = await spawnServer(dataDir, await freePort());
  t.teardown(() => srv.kill('SIGTERM'));
  const kubectl = kubectlRunner(join(dataDir, 'admin.kubeconfig'), home);
  const pl = await kubectl(['get', 'prioritylevelconfigurations.flowcontrol.apiserver.k8s.io']);
  t.equal(pl.code, 0, pl.stderr);
  const plRows = pl.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/));
  t.same(plRows[0], ['NAME', 'TYPE', 'NOMINALCONCURRENCYSHARES', 'QUEUES', 'HANDSIZE', 'QUEUELENGTHLIMIT', 'AGE']);
  t.same(plRows.find((r) => r[0] === 'workload-low')?.slice(1, 6), ['Limited', '100', '128', '6', '50']);
  t.same(plRows.find((r) => r[0] === 'exempt')?.slice(1, 6), ['Exempt', '<none>', '<none>', '<none>', '<none>']);
  const fs = await kubectl(['get', 'flowschemas']);
  t.equal(fs.code, 0, fs.stderr);
  const fsRows = fs.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/));
  t.same(fsRows[0], ['NAME', 'PRIORITYLEVEL', 'MATCHINGPRECEDENCE', 'DISTINGUISHERMETHOD', 'AGE', 'MISSINGPL']);
  t.same(fsRows.find((r) => r[0] === 'system-node-high')?.slice(1, 4), ['node-high', '400', 'ByUser']);
  t.same(fsRows.find((r) => r[0] === 'exempt')?.slice(1, 4), ['exempt', '1', '<none>']);
  t.same(
    fsRows.slice(1).map((r) => r[0]),
    ['catch-all', 'endpoint-controller', 'exempt', 'global-default', 'kube-controller-manager', 'kube-scheduler', 'kube-system-service-accounts', 'probes', 'service-accounts', 'system-leader-election', 'system-node-high', 'system-nodes', 'workload-leader-election'],
    'every bootstrap FlowSchema, listed by name',
  );
  const manifest = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: batch
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 0
    limitResponse:
      type: Queue
      queuing:
        queues: 16
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: batch
spec:
  priorityLevelConfiguration:
    name: batch
  distinguisherMethod:
    type: ByNamespace
  rules:
  - subjects:
    - kind: ServiceAccount
      serviceAccount: {namespace: batch, name: "*"}
    resourceRules:
    - verbs: ["list"]
      apiGroups: ["*"]
      resources: ["*"]
      namespaces: ["*"]
`;
  const applied = await kubectl(['apply', '-f', '-'], manifest);
  t.equal(applied.code, 0, applied.stderr);
  const got = JSON.parse((await kubectl(['get', 'prioritylevelconfiguration', 'batch', '-o', 'json'])).stdout);
  t.same(got.spec.limited, { nominalConcurrencyShares: 0, lendablePercent: 0, limitResponse: { type: 'Queue', queuing: { queues: 16, handSize: 8, queueLengthLimit: 50 } } }, 'defaults filled, the explicit 0 kept');
  const batch = JSON.parse((await kubectl(['get', 'flowschema', 'batch', '-o', 'json'])).stdout);
  t.equal(batch.spec.matchingPrecedence, 1000, 'the default precedence');
  const bad = await kubectl(['apply', '-f', '-'], manifest.replace('queues: 16', 'queues: 16\n        handSize: 20'));
  t.not(bad.code, 0);
  t.match(bad.stderr, /spec\.limited\.limitResponse\.queuing\.handSize: Invalid value: 20: should not be greater than queues \(16\)/);
});
