// Drives the server with @kubernetes/client-node's typed APIs (compiled against upstream's group
// names); prints one JSON line of results for the test to check.
import * as k8s from '@kubernetes/client-node';

const kc = new k8s.KubeConfig();
kc.loadFromFile(process.argv[2]);
const out = {};
const step = async (name, fn) => {
  try {
    out[name] = await fn();
  } catch (e) {
    out[name] = { error: String(e?.body ?? e?.message ?? e).slice(0, 500), code: e?.code };
  }
};

const storage = kc.makeApiClient(k8s.StorageV1Api);
await step('createCSIDriver', async () => (await storage.createCSIDriver({ body: { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: 'node.example.com' }, spec: { attachRequired: false, podInfoOnMount: true } } })).metadata?.name);
await step('readCSIDriver', async () => {
  const d = await storage.readCSIDriver({ name: 'node.example.com' });
  return { apiVersion: d.apiVersion, kind: d.kind, podInfoOnMount: d.spec?.podInfoOnMount };
});
await step('listCSIDriver', async () => (await storage.listCSIDriver()).items.map((i) => i.metadata?.name));
await step('deleteCSIDriver', async () => (await storage.deleteCSIDriver({ name: 'node.example.com' })).metadata?.name);

const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
await step('createLease', async () => (await coordination.createNamespacedLease({ namespace: 'default', body: { metadata: { name: 'node-lease' }, spec: { holderIdentity: 'client-node', leaseDurationSeconds: 15 } } })).spec?.holderIdentity);
await step('replaceLease', async () => {
  const l = await coordination.readNamespacedLease({ name: 'node-lease', namespace: 'default' });
  l.spec.holderIdentity = 'someone-else';
  return (await coordination.replaceNamespacedLease({ name: 'node-lease', namespace: 'default', body: l })).spec?.holderIdentity;
});

const core = kc.makeApiClient(k8s.CoreV1Api);
await step('listNamespaces', async () => (await core.listNamespace()).items.map((i) => i.metadata?.name).sort());
await step('createConfigMap', async () => (await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'node-cm' }, data: { a: 'b' } } })).data?.a);

const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
await step('createClusterRole', async () => (await rbac.createClusterRole({ body: { metadata: { name: 'node-reader' }, rules: [{ apiGroups: ['storage.k8s.io'], resources: ['csidrivers'], verbs: ['get', 'list'] }] } })).metadata?.name);

const watch = new k8s.Watch(kc);
await step('watchConfigMaps', async () => {
  const seen = [];
  await new Promise((resolve, reject) => {
    let req;
    const timer = setTimeout(() => { req?.abort?.(); resolve(); }, 5000);
    watch
      .watch('/api/v1/namespaces/default/configmaps', { resourceVersion: '0' }, (type, obj) => {
        seen.push(`${type} ${obj.metadata.name}`);
        if (seen.length >= 1) { clearTimeout(timer); req?.abort?.(); resolve(); }
      }, (err) => (err ? reject(err) : resolve()))
      .then((r) => (req = r), reject);
  });
  return seen;
});

console.log(JSON.stringify(out));
