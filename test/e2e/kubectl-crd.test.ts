/**
 * Custom resources through the real kubectl (v1.32) against the real binary: a definition written for
 * upstream (apiextensions.k8s.io/v1) applied and waited for, its objects applied, listed with the
 * printer columns and by short name, explained from the published schema, refused by a CEL rule with
 * its message, deleted with every cascade policy against an owner of another kind; `kubectl get crd`
 * resolves without an ambiguity warning.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { freePort, spawnServer, type SpawnedServer } from '../helpers/server.js';
import { tmp } from '../helpers/fixtures.js';
import { type Kubectl, kubectlRunner } from '../helpers/kubectl.js';
import { eventually } from '../helpers/owners.js';

let srv: SpawnedServer;
let kubectl: Kubectl;

const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, shortNames: [gd]}
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Color, type: string, jsonPath: .spec.color, priority: 1}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the gadget should be.
            properties:
              size: {type: integer, minimum: 1, description: How big the gadget is.}
              color: {type: string, description: Its colour.}
            x-kubernetes-validations:
            - rule: "self.size < 100"
              message: too big
`;

const gadget = (name: string, size: number, extra = ''): string => `apiVersion: example.com/v1
kind: Gadget
metadata:
  name: ${name}
${extra}spec: {size: ${size}, color: red}
`;

t.before(async () => {
  const dataDir = tmp('svc-e2e-crd-');
  const home = tmp('svc-e2e-crd-home-');
  mkdirSync(join(home, 'cache'), { recursive: true });
  srv = await spawnServer(dataDir, await freePort());
  kubectl = kubectlRunner(join(dataDir, 'admin.kubeconfig'), home);
});
t.teardown(async () => {
  if (srv && srv.proc.exitCode !== null) console.error(`server exited early (${srv.proc.exitCode}):\n${srv.output()}`);
  await srv?.kill('SIGTERM');
});

async function ok(args: string[], stdin?: string): Promise<string> {
  const r = await kubectl(args, stdin);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

t.test('an upstream definition is applied, established and its objects served with their columns', async (t) => {
  t.match(await ok(['apply', '-f', '-'], CRD), 'customresourcedefinition.apiextensions.k8s.io/gadgets.example.com created');
  await ok(['wait', '--for=condition=Established', 'crd/gadgets.example.com', '--timeout=20s']);
  const crds = await kubectl(['get', 'crd']);
  t.equal(crds.code, 0, crds.stderr);
  t.notMatch(crds.stderr, /could also match/, 'the short name resolves to one group');
  // discovery may lag the Established condition by a moment in kubectl's cache
  t.ok(await eventually(async () => (await kubectl(['apply', '-f', '-'], gadget('g1', 3))).code === 0, 20000, 250), 'a custom resource applied');
  const table = (await ok(['get', 'gadgets'])).trim().split('\n');
  t.match(table[0], /^NAME\s+SIZE$/, 'printer columns (priority 0)');
  t.match(table[1], /^g1\s+3$/);
  const wide = (await ok(['get', 'gd', '-o', 'wide'])).trim().split('\n');
  t.match(wide[0], /^NAME\s+SIZE\s+COLOR$/, 'short name, priority 1 columns with -o wide');
  t.match(wide[1], /^g1\s+3\s+red$/);
  const explained = await ok(['explain', 'gadget.spec.size']);
  t.match(explained, /How big the gadget is\./, 'kubectl explain reads the published schema');
});

t.test('a CEL rule refuses an object with its message; nothing is stored', async (t) => {
  const r = await kubectl(['apply', '-f', '-'], gadget('g-big', 300));
  t.not(r.code, 0);
  t.match(r.stderr, /spec: Invalid value: "object": too big/);
  t.not((await kubectl(['get', 'gadget', 'g-big'])).code, 0, 'not stored');
});

t.test('kubectl delete --cascade of a ConfigMap owning custom resources', async (t) => {
  for (const policy of ['background', 'foreground', 'orphan'] as const) {
    const owner = `owner-${policy}`;
    await ok(['create', 'configmap', owner]);
    const uid = await ok(['get', 'configmap', owner, '-o', 'jsonpath={.metadata.uid}']);
    const ref = `  ownerReferences:\n  - {apiVersion: v1, kind: ConfigMap, name: ${owner}, uid: ${uid}, blockOwnerDeletion: true}\n`;
    await ok(['apply', '-f', '-'], gadget(`dep-${policy}`, 2, ref));
    await ok(['delete', 'configmap', owner, `--cascade=${policy}`, '--timeout=30s']);
    const gone = async () => (await kubectl(['get', 'gadget', `dep-${policy}`])).code !== 0;
    if (policy === 'orphan') {
      t.ok(await eventually(async () => (await ok(['get', 'gadget', `dep-${policy}`, '-o', 'jsonpath={.metadata.ownerReferences}'])) === '', 20000, 250), 'orphan: the dependent stays, its reference removed');
      t.notOk(await gone());
    } else {
      t.ok(await eventually(gone, 20000, 250), `${policy}: the dependent custom resource is collected`);
    }
  }
});
