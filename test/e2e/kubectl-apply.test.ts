/**
 * kubectl (v1.32) as a real client of patch, server-side apply and dry run, against the real binary
 * through the admin.kubeconfig it writes: `kubectl apply --server-side` (create, change, a second
 * field manager conflicting without --force-conflicts and taking over with it), `kubectl patch --type
 * json|merge|strategic`, and `--dry-run=server` on create from a file and `create configmap`. kubectl
 * runs with a private HOME and --cache-dir; results are checked through the API as well.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { freePort, spawnServer, type SpawnedServer } from '../helpers/server.js';
import { tmp } from '../helpers/fixtures.js';
import { type Kubectl, kubectlRunner } from '../helpers/kubectl.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = any;

const NS = 'e2e-ssa';

let srv: SpawnedServer;
let home: string;
let kubeconfig: string;

let kubectl: Kubectl;

const file = (name: string, text: string): string => {
  const p = join(home, name);
  writeFileSync(p, text);
  return p;
};

const get = async (path: string): Promise<{ status: number; json: Obj }> => {
  const r = await srv.admin.get(path);
  return { status: r.status, json: r.json };
};

/** managedFields as [manager, operation] pairs, sorted. */
const owners = (o: Obj): string[][] =>
  (o?.metadata?.managedFields ?? []).map((e: Obj) => [e.manager, e.operation]).sort((a: string[], b: string[]) => (a.join() < b.join() ? -1 : 1));
const fieldsOf = (o: Obj, manager: string, operation: string): Obj => (o?.metadata?.managedFields ?? []).find((e: Obj) => e.manager === manager && e.operation === operation)?.fieldsV1;

t.before(async () => {
  const dataDir = tmp('svc-e2e-ssa-');
  home = tmp('svc-e2e-ssa-home-');
  mkdirSync(join(home, 'cache'), { recursive: true });
  srv = await spawnServer(dataDir, await freePort());
  kubeconfig = join(dataDir, 'admin.kubeconfig');
  kubectl = kubectlRunner(kubeconfig, home);
  const r = await kubectl(['create', 'namespace', NS]);
  if (r.code !== 0) throw new Error(`namespace: ${r.stderr}`);
});
t.teardown(async () => {
  if (srv && srv.proc.exitCode !== null) console.error(`server exited early (${srv.proc.exitCode}):\n${srv.output()}`);
  await srv?.kill('SIGTERM');
});

const CM_PATH = `/api/v1/namespaces/${NS}/configmaps`;
// keys are plain YAML scalars: avoid y/n/on/off, which YAML 1.1 (kubectl) reads as booleans
const cmYaml = (name: string, data: Record<string, string>, labels: Record<string, string> = {}): string =>
  [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    `  name: ${name}`,
    `  namespace: ${NS}`,
    ...(Object.keys(labels).length ? ['  labels:', ...Object.entries(labels).map(([k, v]) => `    ${k}: "${v}"`)] : []),
    'data:',
    ...Object.entries(data).map(([k, v]) => `  ${k}: "${v}"`),
    '',
  ].join('\n');

t.test('kubectl apply --server-side creates, then changes; the field manager "kubectl" owns what it applied', async (t) => {
  const create = await kubectl(['apply', '--server-side', '-f', file('ssa-1.yaml', cmYaml('ssa', { x: '1', w: '1' }, { app: 'demo' }))]);
  t.equal(create.code, 0, create.stderr);
  t.match(create.stdout, /configmap\/ssa serverside-applied/);
  let live = await get(`${CM_PATH}/ssa`);
  t.same(live.json?.data, { x: '1', w: '1' });
  t.same(owners(live.json), [['kubectl', 'Apply']], 'one Apply entry for kubectl');
  t.same(fieldsOf(live.json, 'kubectl', 'Apply'), { 'f:data': { 'f:w': {}, 'f:x': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } });

  const change = await kubectl(['apply', '--server-side', '-f', file('ssa-2.yaml', cmYaml('ssa', { x: '2' }, { app: 'demo' }))]);
  t.equal(change.code, 0, change.stderr);
  t.match(change.stdout, /configmap\/ssa serverside-applied/);
  live = await get(`${CM_PATH}/ssa`);
  t.same(live.json?.data, { x: '2' }, 'x changed, w (no longer applied, owned by nobody else) removed');
  t.same(fieldsOf(live.json, 'kubectl', 'Apply'), { 'f:data': { 'f:x': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } });

  const out = await kubectl(['get', 'configmap', 'ssa', '-n', NS, '--show-managed-fields', '-o', 'jsonpath={.metadata.managedFields[0].manager}/{.metadata.managedFields[0].operation}']);
  t.equal(out.code, 0, out.stderr);
  t.equal(out.stdout, 'kubectl/Apply', 'kubectl reads the managedFields back');
});

t.test('a second manager conflicting without --force-conflicts fails with kubectl\'s conflict report, then takes over with it', async (t) => {
  const before = await get(`${CM_PATH}/ssa`);
  const other = file('ssa-other.yaml', cmYaml('ssa', { x: '3', z: '1' }));
  const conflict = await kubectl(['apply', '--server-side', '--field-manager=other', '-f', other]);
  t.not(conflict.code, 0, 'kubectl exits non-zero');
  t.match(conflict.stderr, /Apply failed with 1 conflict: conflict with "kubectl": \.data\.x/, 'the server\'s conflict message');
  t.match(conflict.stderr, /--force-conflicts/, 'kubectl\'s advice to force');
  const unchanged = await get(`${CM_PATH}/ssa`);
  t.equal(unchanged.json?.metadata?.resourceVersion, before.json?.metadata?.resourceVersion, 'nothing written');

  const forced = await kubectl(['apply', '--server-side', '--field-manager=other', '--force-conflicts', '-f', other]);
  t.equal(forced.code, 0, forced.stderr);
  t.match(forced.stdout, /configmap\/ssa serverside-applied/);
  const live = await get(`${CM_PATH}/ssa`);
  t.same(live.json?.data, { x: '3', z: '1' });
  t.same(owners(live.json), [['kubectl', 'Apply'], ['other', 'Apply']]);
  t.same(fieldsOf(live.json, 'other', 'Apply'), { 'f:data': { 'f:x': {}, 'f:z': {} } }, 'other owns x (taken) and z');
  t.same(fieldsOf(live.json, 'kubectl', 'Apply'), { 'f:metadata': { 'f:labels': { 'f:app': {} } } }, 'kubectl lost x');

  // applying the live value is no conflict: ownership is shared
  const share = await kubectl(['apply', '--server-side', '-f', file('ssa-share.yaml', cmYaml('ssa', { x: '3' }, { app: 'demo' }))]);
  t.equal(share.code, 0, share.stderr);
  const shared = await get(`${CM_PATH}/ssa`);
  t.same(fieldsOf(shared.json, 'kubectl', 'Apply'), { 'f:data': { 'f:x': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } }, 'kubectl owns x again, with other');
  t.same(fieldsOf(shared.json, 'other', 'Apply'), { 'f:data': { 'f:x': {}, 'f:z': {} } });
});

t.test('kubectl apply --server-side on a cluster-scoped kind of a named group (CSIDriver), with --dry-run=server first', async (t) => {
  const yaml = 'apiVersion: storage.svc.io/v1\nkind: CSIDriver\nmetadata:\n  name: ssa.example.com\nspec:\n  podInfoOnMount: true\n  volumeLifecycleModes:\n  - Persistent\n  - Ephemeral\n';
  const dry = await kubectl(['apply', '--server-side', '--dry-run=server', '-f', file('csi.yaml', yaml)]);
  t.equal(dry.code, 0, dry.stderr);
  t.match(dry.stdout, /csidriver\.storage\.svc\.io\/ssa\.example\.com serverside-applied \(server dry run\)/);
  t.equal((await get('/apis/storage.svc.io/v1/csidrivers/ssa.example.com')).status, 404, 'dry run stored nothing');
  const real = await kubectl(['apply', '--server-side', '-f', file('csi.yaml', yaml)]);
  t.equal(real.code, 0, real.stderr);
  const live = await get('/apis/storage.svc.io/v1/csidrivers/ssa.example.com');
  t.equal(live.status, 200);
  t.same(live.json?.spec?.volumeLifecycleModes, ['Persistent', 'Ephemeral']);
  t.same(fieldsOf(live.json, 'kubectl', 'Apply'), { 'f:spec': { 'f:podInfoOnMount': {}, 'f:volumeLifecycleModes': { 'v:"Ephemeral"': {}, 'v:"Persistent"': {} } } });
});

t.test('kubectl apply --server-side validates strictly by default: an unknown field is an error and nothing is written', async (t) => {
  const r = await kubectl(['apply', '--server-side', '-f', file('unknown.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: strict\n  namespace: e2e-ssa\nbogus: 1\ndata:\n  a: "1"\n')]);
  t.not(r.code, 0, 'kubectl exits non-zero');
  t.match(r.stderr, /unknown field "bogus"/);
  t.equal((await get(`${CM_PATH}/strict`)).status, 404, 'nothing created');
});

t.test('kubectl patch --type json | merge | strategic', async (t) => {
  const c = await kubectl(['create', '-f', file('patchme.yaml', cmYaml('patchme', { a: '1', b: '2' }, { l: 'x' }))]);
  t.equal(c.code, 0, c.stderr);
  const rows: { type: string; patch: string; data?: Obj; labels?: Obj }[] = [
    { type: 'json', patch: '[{"op":"replace","path":"/data/a","value":"10"},{"op":"remove","path":"/data/b"}]', data: { a: '10' } },
    { type: 'merge', patch: '{"data":{"c":"3","a":null},"metadata":{"labels":{"m":"y"}}}', data: { c: '3' }, labels: { l: 'x', m: 'y' } },
    { type: 'strategic', patch: '{"data":{"d":"4"},"metadata":{"labels":{"l":null}}}', data: { c: '3', d: '4' }, labels: { m: 'y' } },
  ];
  for (const row of rows) {
    const r = await kubectl(['patch', 'configmap', 'patchme', '-n', NS, '--type', row.type, '-p', row.patch]);
    t.equal(r.code, 0, `--type ${row.type}: ${r.stderr}`);
    t.match(r.stdout, /configmap\/patchme patched/, `--type ${row.type}: kubectl reports the patch`);
    const live = await get(`${CM_PATH}/patchme`);
    if (row.data) t.same(live.json?.data, row.data, `--type ${row.type}: data`);
    if (row.labels) t.same(live.json?.metadata?.labels, row.labels, `--type ${row.type}: labels`);
  }
  const live = await get(`${CM_PATH}/patchme`);
  t.ok(owners(live.json).some(([m, op]) => m === 'kubectl-patch' && op === 'Update'), 'kubectl patch writes as the "kubectl-patch" manager (Update)');
  t.ok(owners(live.json).some(([m, op]) => m === 'kubectl-create' && op === 'Update'), 'kubectl create wrote as "kubectl-create"');

  const same = await kubectl(['patch', 'configmap', 'patchme', '-n', NS, '--type', 'merge', '-p', '{"data":{"c":"3"}}']);
  t.equal(same.code, 0, same.stderr);
  t.match(same.stdout, /configmap\/patchme patched \(no change\)/, 'a no-op patch is reported as no change');

  const failing = await kubectl(['patch', 'configmap', 'patchme', '-n', NS, '--type', 'json', '-p', '[{"op":"test","path":"/data/c","value":"nope"},{"op":"remove","path":"/data/c"}]']);
  t.not(failing.code, 0, 'a failing test operation makes kubectl fail');
  t.same((await get(`${CM_PATH}/patchme`)).json?.data, { c: '3', d: '4' }, 'nothing written');

  const missing = await kubectl(['patch', 'configmap', 'nosuch', '-n', NS, '--type', 'merge', '-p', '{"data":{"a":"1"}}']);
  t.not(missing.code, 0, 'patching a missing object fails');
  t.match(missing.stderr, /configmaps "nosuch" not found/);
});

t.test('kubectl create -f --dry-run=server and create configmap --dry-run=server store nothing', async (t) => {
  const fromFile = await kubectl(['create', '-f', file('dry.yaml', cmYaml('dry-file', { a: '1' })), '--dry-run=server']);
  t.equal(fromFile.code, 0, fromFile.stderr);
  t.match(fromFile.stdout, /configmap\/dry-file created \(server dry run\)/);
  const literal = await kubectl(['create', 'configmap', 'x', '-n', NS, '--from-literal=a=b', '--dry-run=server', '-o', 'json']);
  t.equal(literal.code, 0, literal.stderr);
  const obj = JSON.parse(literal.stdout);
  t.equal(obj.kind, 'ConfigMap', 'the server answers with the object it would store');
  t.same(obj.data, { a: 'b' });
  t.equal(obj.metadata?.namespace, NS);
  for (const name of ['dry-file', 'x']) {
    t.equal((await get(`${CM_PATH}/${name}`)).status, 404, `${name}: nothing stored`);
    const g = await kubectl(['get', 'configmap', name, '-n', NS]);
    t.not(g.code, 0, `${name}: kubectl get fails`);
    t.match(g.stderr, new RegExp(`configmaps "${name}" not found`));
  }
  // a dry run of an object that exists reports the conflict a real create would meet
  const dup = await kubectl(['create', 'configmap', 'ssa', '-n', NS, '--from-literal=a=b', '--dry-run=server']);
  t.not(dup.code, 0, 'dry-run create of an existing name fails');
  t.match(dup.stderr, /configmaps "ssa" already exists/, 'kubectl prints the AlreadyExists error');
});

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

t.test('client-side kubectl apply, then --server-side on the same object: takes over without --force-conflicts', async (t) => {
  const csa = await kubectl(['apply', '-f', file('move-1.yaml', cmYaml('move', { a: '1', b: '1' }, { app: 'demo' }))]);
  t.equal(csa.code, 0, csa.stderr);
  t.match(csa.stdout, /configmap\/move created/);
  let live = await get(`${CM_PATH}/move`);
  t.ok(live.json?.metadata?.annotations?.[LAST_APPLIED], 'client-side apply wrote its annotation');
  t.same(owners(live.json), [['kubectl-client-side-apply', 'Update']]);

  // a value changed in the manifest while switching: owned by the client-side manager, still as last applied
  const ssa = await kubectl(['apply', '--server-side', '-f', file('move-2.yaml', cmYaml('move', { a: '2', b: '1' }, { app: 'demo' }))]);
  t.equal(ssa.code, 0, `no conflict: ${ssa.stderr}`);
  t.match(ssa.stdout, /configmap\/move serverside-applied/);
  live = await get(`${CM_PATH}/move`);
  t.same(live.json?.data, { a: '2', b: '1' });
  t.ok(owners(live.json).some(([m, op]) => m === 'kubectl' && op === 'Apply'), 'kubectl now applies server-side');
  t.same(fieldsOf(live.json, 'kubectl', 'Apply')?.['f:data'], { 'f:a': {}, 'f:b': {} }, 'kubectl owns the data it applied');
  const annotation = JSON.parse(live.json?.metadata?.annotations?.[LAST_APPLIED] ?? '{}');
  t.same(annotation.data, { a: '2', b: '1' }, 'the annotation follows the server-side applied configuration');

  // and on: a later server-side apply keeps the annotation current
  const again = await kubectl(['apply', '--server-side', '-f', file('move-3.yaml', cmYaml('move', { a: '3' }, { app: 'demo' }))]);
  t.equal(again.code, 0, again.stderr);
  live = await get(`${CM_PATH}/move`);
  t.same(live.json?.data, { a: '3' }, 'b, no longer applied by anyone, is gone');
  t.same(JSON.parse(live.json?.metadata?.annotations?.[LAST_APPLIED] ?? '{}').data, { a: '3' });
});

t.test('a field changed since the client-side apply by another writer still conflicts', async (t) => {
  const csa = await kubectl(['apply', '-f', file('drift-1.yaml', cmYaml('drift', { a: '1', b: '1' }))]);
  t.equal(csa.code, 0, csa.stderr);
  const patched = await kubectl(['patch', 'configmap', 'drift', '-n', NS, '--type', 'merge', '-p', '{"data":{"b":"9"}}']);
  t.equal(patched.code, 0, patched.stderr);
  const ssa = await kubectl(['apply', '--server-side', '-f', file('drift-2.yaml', cmYaml('drift', { a: '2', b: '2' }))]);
  t.not(ssa.code, 0, 'conflict');
  t.match(ssa.stderr, /Apply failed with 1 conflict: conflict with "kubectl-patch" using v1: \.data\.b/, 'only the drifted field is reported');
  t.same((await get(`${CM_PATH}/drift`)).json?.data, { a: '1', b: '9' }, 'nothing written');
});

t.test('a last-applied annotation that is not JSON is ignored: the conflict stands, the server keeps serving', async (t) => {
  const csa = await kubectl(['apply', '-f', file('bad-1.yaml', cmYaml('bad-annotation', { a: '1' }))]);
  t.equal(csa.code, 0, csa.stderr);
  const ann = await kubectl(['annotate', 'configmap', 'bad-annotation', '-n', NS, '--overwrite', `${LAST_APPLIED}={not json`]);
  t.equal(ann.code, 0, ann.stderr);
  const ssa = await kubectl(['apply', '--server-side', '-f', file('bad-2.yaml', cmYaml('bad-annotation', { a: '2' }))]);
  t.not(ssa.code, 0, 'the conflict is not taken over');
  t.match(ssa.stderr, /conflict with "kubectl-client-side-apply" using v1: \.data\.a/);
  const forced = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', file('bad-2.yaml', cmYaml('bad-annotation', { a: '2' }))]);
  t.equal(forced.code, 0, forced.stderr);
  const live = await get(`${CM_PATH}/bad-annotation`);
  t.same(live.json?.data, { a: '2' });
  t.same(JSON.parse(live.json?.metadata?.annotations?.[LAST_APPLIED]).data, { a: '2' }, 'the annotation is rewritten from the applied configuration');
});
