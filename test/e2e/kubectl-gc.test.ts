/**
 * The garbage collector through the real kubectl (v1.32) against the real binary (worker pool on):
 * `kubectl delete --cascade=background|foreground|orphan` returns (it waits for the owner to be gone,
 * which needs the collector for foreground and orphan), and leaves the dependents as each policy says;
 * `kubectl wait --for=delete` on an owner held by a blocking dependent; a cluster-scoped owner.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { freePort, spawnServer, type SpawnedServer } from '../helpers/server.js';
import { tmp } from '../helpers/fixtures.js';
import { type Kubectl, kubectlRunner } from '../helpers/kubectl.js';
import { eventually } from '../helpers/owners.js';

const NS = 'gc-e2e';
let srv: SpawnedServer;
let kubectl: Kubectl;

t.before(async () => {
  const dataDir = tmp('svc-e2e-gc-');
  const home = tmp('svc-e2e-gc-home-');
  mkdirSync(join(home, 'cache'), { recursive: true });
  srv = await spawnServer(dataDir, await freePort());
  kubectl = kubectlRunner(join(dataDir, 'admin.kubeconfig'), home);
  const r = await kubectl(['create', 'namespace', NS]);
  if (r.code !== 0) throw new Error(r.stderr);
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

const uidOf = (kind: string, name: string, ns = NS): Promise<string> => ok(['get', kind, name, ...(ns ? ['-n', ns] : []), '-o', 'jsonpath={.metadata.uid}']);

/** Dependents of an owner: a config map and a secret, each with optional extra metadata. */
function dependentsYaml(prefix: string, owner: { apiVersion: string; kind: string; name: string; uid: string }, o: { block?: boolean; hold?: string } = {}): string {
  const ref = [
    '  ownerReferences:',
    `  - apiVersion: ${owner.apiVersion}`,
    `    kind: ${owner.kind}`,
    `    name: ${owner.name}`,
    `    uid: ${owner.uid}`,
    ...(o.block ? ['    blockOwnerDeletion: true'] : []),
  ].join('\n');
  const fin = o.hold ? `\n  finalizers: [${o.hold}]` : '';
  return [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    `  name: ${prefix}-cm`,
    `  namespace: ${NS}`,
    ref + fin,
    'data: {k: v}',
    '---',
    'apiVersion: v1',
    'kind: Secret',
    'metadata:',
    `  name: ${prefix}-secret`,
    `  namespace: ${NS}`,
    ref,
    '',
  ].join('\n');
}

async function ownerCm(name: string): Promise<{ apiVersion: string; kind: string; name: string; uid: string }> {
  await ok(['create', 'configmap', name, '-n', NS, '--from-literal=a=b']);
  return { apiVersion: 'v1', kind: 'ConfigMap', name, uid: await uidOf('configmap', name) };
}

const exists = async (kind: string, name: string, ns = NS): Promise<boolean> => (await kubectl(['get', kind, name, ...(ns ? ['-n', ns] : []), '-o', 'name'])).code === 0;

t.test('kubectl delete --cascade=background: the owner goes, then the dependents are collected', async (t) => {
  const owner = await ownerCm('bg-owner');
  await ok(['apply', '-f', '-'], dependentsYaml('bg', owner, { block: true }));
  const out = await ok(['delete', 'configmap', 'bg-owner', '-n', NS, '--cascade=background']);
  t.match(out, /configmap "bg-owner" deleted/);
  t.ok(await eventually(async () => !(await exists('configmap', 'bg-cm')) && !(await exists('secret', 'bg-secret'))), 'both dependents collected');
});

t.test('kubectl delete --cascade=foreground returns once the owner is gone, after its blocking dependents', async (t) => {
  const owner = await ownerCm('fg-owner');
  await ok(['apply', '-f', '-'], dependentsYaml('fg', owner, { block: true }));
  const out = await ok(['delete', 'configmap', 'fg-owner', '-n', NS, '--cascade=foreground']);
  t.match(out, /configmap "fg-owner" deleted/);
  t.notOk(await exists('configmap', 'fg-owner'), 'the owner is gone when kubectl returns');
  t.notOk(await exists('configmap', 'fg-cm'), 'the blocking config map went first');
  t.notOk(await exists('secret', 'fg-secret'), 'the blocking secret went first');
});

t.test('kubectl delete --cascade=foreground --wait=false, then kubectl wait --for=delete once the blocker is released', async (t) => {
  const owner = await ownerCm('fgw-owner');
  await ok(['apply', '-f', '-'], dependentsYaml('fgw', owner, { block: true, hold: 'example.com/hold' }));
  await ok(['delete', 'configmap', 'fgw-owner', '-n', NS, '--cascade=foreground', '--wait=false']);
  t.ok(
    await eventually(async () => (await ok(['get', 'configmap', 'fgw-cm', '-n', NS, '-o', 'jsonpath={.metadata.deletionTimestamp}'])) !== ''),
    'the held dependent is being deleted',
  );
  t.equal(await ok(['get', 'configmap', 'fgw-owner', '-n', NS, '-o', 'jsonpath={.metadata.finalizers}']), '["foregroundDeletion"]', 'the owner waits with foregroundDeletion');
  await ok(['patch', 'configmap', 'fgw-cm', '-n', NS, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  const w = await kubectl(['wait', '--for=delete', 'configmap/fgw-owner', '-n', NS, '--timeout=20s']);
  t.equal(w.code, 0, `kubectl wait: ${w.stderr}`);
  t.notOk(await exists('configmap', 'fgw-cm'));
});

t.test('kubectl delete --cascade=orphan returns once the owner is gone; the dependents stay, orphaned', async (t) => {
  const owner = await ownerCm('or-owner');
  await ok(['apply', '-f', '-'], dependentsYaml('or', owner, { block: true }));
  const out = await ok(['delete', 'configmap', 'or-owner', '-n', NS, '--cascade=orphan']);
  t.match(out, /configmap "or-owner" deleted/);
  t.notOk(await exists('configmap', 'or-owner'), 'the owner is gone when kubectl returns');
  for (const kind of ['configmap/or-cm', 'secret/or-secret']) {
    const refs = await ok(['get', kind, '-n', NS, '-o', 'jsonpath={.metadata.ownerReferences}']);
    t.equal(refs, '', `${kind} stays without owner references`);
  }
});

t.test('a cluster-scoped owner (CSIDriver) of namespaced dependents, deleted with kubectl', async (t) => {
  await ok(['apply', '-f', '-'], 'apiVersion: storage.svc.io/v1\nkind: CSIDriver\nmetadata:\n  name: gc.csi.example.com\nspec: {}\n');
  const owner = { apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', name: 'gc.csi.example.com', uid: await uidOf('csidriver', 'gc.csi.example.com', '') };
  await ok(['apply', '-f', '-'], dependentsYaml('csi', owner, { block: true }));
  await ok(['delete', 'csidriver', 'gc.csi.example.com', '--cascade=foreground']);
  t.notOk(await exists('csidriver', 'gc.csi.example.com', ''), 'the owner is gone');
  t.notOk(await exists('configmap', 'csi-cm'), 'its namespaced dependents went first');
  t.notOk(await exists('secret', 'csi-secret'));
});
