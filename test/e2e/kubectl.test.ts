/**
 * End to end with the real kubectl (v1.32) against the real binary, through the admin.kubeconfig the
 * server writes on its first start: version, api-resources, create from YAML, get -o yaml / jsonpath,
 * get csidrivers / namespaces, label selection, replace, server-side dry run, errors, delete (including
 * a namespace, which kubectl waits for). kubectl runs with a private HOME and --cache-dir.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { freePort, spawnServer, type SpawnedServer, startServer } from '../helpers/server.js';
import { tmp } from '../helpers/fixtures.js';
import { type Kubectl, kubectlRunner } from '../helpers/kubectl.js';


let srv: SpawnedServer;
let home: string;
let kubeconfig: string;

let kubectl: Kubectl;

const file = (name: string, text: string): string => {
  const p = join(home, name);
  writeFileSync(p, text);
  return p;
};

t.before(async () => {
  const dataDir = tmp('svc-e2e-');
  home = tmp('svc-e2e-home-');
  mkdirSync(join(home, 'cache'), { recursive: true });
  srv = await spawnServer(dataDir, await freePort());
  kubeconfig = join(dataDir, 'admin.kubeconfig');
  kubectl = kubectlRunner(kubeconfig, home);
});
t.teardown(async () => {
  if (srv && srv.proc.exitCode !== null) console.error(`server exited early (${srv.proc.exitCode}):\n${srv.output()}`);
  await srv?.kill('SIGTERM');
});

t.test('admin.kubeconfig points at the real port', async (t) => {
  const kc = readFileSync(kubeconfig, 'utf8');
  t.ok(kc.includes(`server: ${srv.url}`), `server: ${srv.url}`);
});

t.test('kubectl version reaches the server (v1.32)', async (t) => {
  const r = await kubectl(['version', '-o', 'json']);
  t.equal(r.code, 0, r.stderr);
  const v = JSON.parse(r.stdout);
  t.equal(v.serverVersion?.major, '1');
  t.equal(v.serverVersion?.minor, '32');
});

t.test('kubectl api-resources lists the served kinds', async (t) => {
  const r = await kubectl(['api-resources', '--no-headers', '-o', 'wide']);
  t.equal(r.code, 0, r.stderr);
  const rows = r.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/));
  const find = (name: string) => rows.find((x) => x[0] === name);
  const groupsOf = (name: string) => rows.filter((x) => x[0] === name).map((x) => x.slice(1, 4));
  // With upstream group aliases on, a kind of an svc.io group is listed under both spellings.
  t.same(groupsOf('csidrivers').sort(), [['storage.k8s.io/v1', 'false', 'CSIDriver'], ['storage.svc.io/v1', 'false', 'CSIDriver']]);
  t.same(groupsOf('leases').sort(), [['coordination.k8s.io/v1', 'true', 'Lease'], ['coordination.svc.io/v1', 'true', 'Lease']]);
  t.same(find('configmaps')?.slice(1, 5), ['cm', 'v1', 'true', 'ConfigMap']);
  t.same(find('namespaces')?.slice(1, 5), ['ns', 'v1', 'false', 'Namespace']);
  t.same(find('events')?.slice(1, 5), ['ev', 'v1', 'true', 'Event']);
  t.same(find('serviceaccounts')?.slice(1, 5), ['sa', 'v1', 'true', 'ServiceAccount']);
  t.same(find('secrets')?.slice(1, 4), ['v1', 'true', 'Secret']);
});

t.test('kubectl get namespaces shows the system namespaces', async (t) => {
  const r = await kubectl(['get', 'namespaces']);
  t.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  t.match(lines[0], /^NAME\s/, 'header');
  const names = lines.slice(1).map((l) => l.split(/\s+/)[0]);
  t.same(names, ['default', 'svc-node-lease', 'svc-public', 'svc-system']);
  const phase = await kubectl(['get', 'namespace', 'default', '-o', 'jsonpath={.status.phase}']);
  t.equal(phase.stdout, 'Active');
});

const manifest = `apiVersion: v1
kind: Namespace
metadata:
  name: e2e
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
  namespace: e2e
  labels:
    app: demo
data:
  greeting: hello
---
apiVersion: v1
kind: Secret
metadata:
  name: demo-secret
  namespace: e2e
type: Opaque
stringData:
  password: s3cret
---
apiVersion: storage.svc.io/v1
kind: CSIDriver
metadata:
  name: e2e.csi.example.com
spec:
  attachRequired: false
  podInfoOnMount: true
  volumeLifecycleModes:
  - Persistent
  - Ephemeral
`;

t.test('kubectl create -f a multi-document YAML', async (t) => {
  const r = await kubectl(['create', '-f', file('manifest.yaml', manifest)]);
  t.equal(r.code, 0, r.stderr);
  t.same(r.stdout.trim().split('\n'), [
    'namespace/e2e created',
    'configmap/demo created',
    'secret/demo-secret created',
    'csidriver.storage.svc.io/e2e.csi.example.com created',
  ]);
});

t.test('kubectl get -o yaml returns the stored objects', async (t) => {
  const cm = await kubectl(['get', 'configmap', 'demo', '-n', 'e2e', '-o', 'yaml']);
  t.equal(cm.code, 0, cm.stderr);
  const o = parseYaml(cm.stdout);
  t.equal(o.kind, 'ConfigMap');
  t.equal(o.metadata.namespace, 'e2e');
  t.same(o.data, { greeting: 'hello' });
  t.same(o.metadata.labels, { app: 'demo' });
  t.ok(o.metadata.uid && o.metadata.resourceVersion && o.metadata.creationTimestamp, 'server-set metadata');

  const sec = await kubectl(['get', 'secret', 'demo-secret', '-n', 'e2e', '-o', 'jsonpath={.data.password}']);
  t.equal(Buffer.from(sec.stdout, 'base64').toString(), 's3cret', 'stringData stored as data');

  const d = await kubectl(['get', 'csidriver', 'e2e.csi.example.com', '-o', 'yaml']);
  t.equal(d.code, 0, d.stderr);
  const spec = parseYaml(d.stdout).spec;
  t.same(spec, {
    attachRequired: false,
    podInfoOnMount: true,
    volumeLifecycleModes: ['Persistent', 'Ephemeral'],
    storageCapacity: false,
    fsGroupPolicy: 'ReadWriteOnceWithFSType',
    requiresRepublish: false,
    seLinuxMount: false,
  });
});

t.test('kubectl get csidrivers lists the driver', async (t) => {
  const r = await kubectl(['get', 'csidrivers']);
  t.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  t.match(lines[0], /^NAME\s/);
  t.ok(
    lines.slice(1).some((l) => l.startsWith('e2e.csi.example.com ')),
    'row for the driver',
  );
  const j = await kubectl(['get', 'csidrivers', '-o', 'json']);
  const list = JSON.parse(j.stdout);
  t.equal(list.kind, 'List');
  t.equal(list.items.length, 1);
});

t.test('kubectl get with a label selector and across namespaces', async (t) => {
  const r = await kubectl(['get', 'configmaps', '-A', '-l', 'app=demo', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}']);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout.trim(), 'e2e/demo');
  const none = await kubectl(['get', 'configmaps', '-n', 'e2e', '-l', 'app=nothing']);
  t.equal(none.code, 0);
  t.match(none.stderr, /No resources found in e2e namespace\./);
});

t.test('kubectl replace -f updates the object', async (t) => {
  const updated = manifest.split('---\n')[1]!.replace('greeting: hello', 'greeting: bonjour');
  const r = await kubectl(['replace', '-f', file('replace.yaml', updated)]);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout.trim(), 'configmap/demo replaced');
  const g = await kubectl(['get', 'configmap', 'demo', '-n', 'e2e', '-o', 'jsonpath={.data.greeting}']);
  t.equal(g.stdout, 'bonjour');
});

t.test('kubectl replace cannot change an immutable CSIDriver field', async (t) => {
  const changed = manifest.split('---\n')[3]!.replace('attachRequired: false', 'attachRequired: true');
  const r = await kubectl(['replace', '-f', file('csi-replace.yaml', changed)]);
  t.not(r.code, 0, 'fails');
  t.match(r.stderr, /The CSIDriver "e2e\.csi\.example\.com" is invalid: spec\.attachedRequired: Invalid value: true: field is immutable/);
});

t.test('server errors are shown by kubectl', async (t) => {
  t.test('invalid name', async (t) => {
    const r = await kubectl(['create', '-f', '-'], 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n  namespace: e2e\n');
    t.equal(r.code, 1);
    t.match(r.stderr, /The ConfigMap "Bad_Name" is invalid: metadata\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/);
  });
  t.test('already exists', async (t) => {
    const r = await kubectl(['create', '-f', join(home, 'manifest.yaml')]);
    t.equal(r.code, 1);
    t.match(r.stderr, /Error from server \(AlreadyExists\): error when creating ".*manifest\.yaml": configmaps "demo" already exists/);
  });
  t.test('unknown field with kubectl strict validation', async (t) => {
    const r = await kubectl(['create', '-f', '-'], 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unk\n  namespace: e2e\nfoo: 1\n');
    t.equal(r.code, 1);
    t.match(r.stderr, /Error from server \(BadRequest\): .*ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "foo"/);
  });
  t.test('unknown field with --validate=warn creates and warns', async (t) => {
    const r = await kubectl(['create', '--validate=warn', '-f', '-'], 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unk\n  namespace: e2e\nfoo: 1\n');
    t.equal(r.code, 0, r.stderr);
    t.match(r.stderr, /Warning: unknown field "foo"/);
  });
  t.test('not found', async (t) => {
    const r = await kubectl(['get', 'csidriver', 'nope.example.com']);
    t.equal(r.code, 1);
    t.match(r.stderr, /Error from server \(NotFound\): csidrivers\.storage\.svc\.io "nope\.example\.com" not found/);
  });
  t.test('protected namespace', async (t) => {
    const r = await kubectl(['delete', 'namespace', 'default']);
    t.equal(r.code, 1);
    t.match(r.stderr, /Error from server \(Forbidden\): namespaces "default" is forbidden: this namespace may not be deleted/);
  });
});

t.test('kubectl create --dry-run=server -f stores nothing', async (t) => {
  const r = await kubectl(['create', '--dry-run=server', '-f', '-'], 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry\n  namespace: e2e\n');
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /configmap\/dry created \(server dry run\)/);
  const g = await kubectl(['get', 'configmap', 'dry', '-n', 'e2e']);
  t.equal(g.code, 1, 'not stored');
});

t.test('kubectl generator commands (typed clients send protobuf request bodies)', async (t) => {
  const ns = await kubectl(['create', 'namespace', 'e2e-generated']);
  t.equal(ns.code, 0, ns.stderr);
  t.equal(ns.stdout.trim(), 'namespace/e2e-generated created');
  const cm = await kubectl(['create', 'configmap', 'gen-cm', '-n', 'e2e-generated', '--from-literal=k=v']);
  t.equal(cm.code, 0, cm.stderr);
  t.equal(cm.stdout.trim(), 'configmap/gen-cm created');
  const sec = await kubectl(['create', 'secret', 'generic', 'gen-secret', '-n', 'e2e-generated', '--from-literal=pw=x1']);
  t.equal(sec.code, 0, sec.stderr);
  t.equal(sec.stdout.trim(), 'secret/gen-secret created');
  const g = await kubectl(['get', 'configmap', 'gen-cm', '-n', 'e2e-generated', '-o', 'jsonpath={.data.k}']);
  t.equal(g.stdout, 'v');
  const s = await kubectl(['get', 'secret', 'gen-secret', '-n', 'e2e-generated', '-o', 'jsonpath={.data.pw}']);
  t.equal(Buffer.from(s.stdout, 'base64').toString(), 'x1');
  const d = await kubectl(['delete', 'namespace', 'e2e-generated', '--timeout=20s']);
  t.equal(d.code, 0, d.stderr);
});

t.test('kubectl delete', async (t) => {
  t.test('a CSIDriver', async (t) => {
    const r = await kubectl(['delete', 'csidriver', 'e2e.csi.example.com']);
    t.equal(r.code, 0, r.stderr);
    t.equal(r.stdout.trim(), 'csidriver.storage.svc.io "e2e.csi.example.com" deleted');
    const g = await kubectl(['get', 'csidriver', 'e2e.csi.example.com']);
    t.equal(g.code, 1);
    t.match(g.stderr, /NotFound/);
  });
  t.test('by label selector', async (t) => {
    const r = await kubectl(['delete', 'configmap', '-n', 'e2e', '-l', 'app=demo']);
    t.equal(r.code, 0, r.stderr);
    t.equal(r.stdout.trim(), 'configmap "demo" deleted');
  });
  t.test('a namespace and everything in it (kubectl waits until it is gone)', async (t) => {
    const r = await kubectl(['delete', 'namespace', 'e2e', '--timeout=20s']);
    t.equal(r.code, 0, r.stderr);
    t.equal(r.stdout.trim(), 'namespace "e2e" deleted');
    const g = await kubectl(['get', 'namespace', 'e2e']);
    t.equal(g.code, 1, 'namespace gone when kubectl returns');
    t.match(g.stderr, /namespaces "e2e" not found/);
    const s = await kubectl(['get', 'secrets', '-n', 'e2e', '-o', 'name']);
    t.equal(s.stdout.trim(), '', 'contents gone');
  });
});

t.test('kubectl auth whoami shows the caller (SelfSubjectReview under authentication.k8s.io, protobuf body)', async (t) => {
  const s = await startServer();
  t.teardown(() => s.stop());
  const home = tmp('svc-kubectl-home-');
  const kubectl = kubectlRunner(join(s.dataDir, 'admin.kubeconfig'), home);
  const r = await kubectl(['auth', 'whoami', '-o', 'json']);
  t.equal(r.code, 0, r.stderr);
  const review = JSON.parse(r.stdout);
  t.equal(review.apiVersion, 'authentication.k8s.io/v1');
  t.equal(review.status.userInfo.username, 'svc-admin');
  t.same(review.status.userInfo.groups, ['system:masters', 'system:authenticated']);
});
