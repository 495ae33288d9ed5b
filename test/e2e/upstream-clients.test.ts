/**
 * Unmodified upstream clients against the server, through the group aliases: Debian's Python client
 * (typed StorageV1Api, CoordinationV1Api, its leader election) and @kubernetes/client-node's typed
 * APIs on Node 22. Each script prints one JSON line of results.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { startServer } from '../helpers/server.js';

const clients = fileURLToPath(new URL('../../../test/clients/', import.meta.url));

function runClient(cmd: string, args: string[]): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd: clients, timeout: 90_000 }, (err, stdout, stderr) => {
      const line = String(stdout).trim().split('\n').at(-1) ?? '';
      try {
        resolve(JSON.parse(line) as Record<string, unknown>);
      } catch {
        reject(new Error(`${cmd} printed no result (${err?.message ?? ''}): ${stdout}\n${stderr}`));
      }
    });
  });
}

t.test('the Python client: typed storage and coordination APIs under upstream group names, and leader election', async (t) => {
  const s = await startServer(['--authorization-mode=AlwaysAllow']);
  t.teardown(() => s.stop());
  const r = await runClient('/usr/bin/python3', [join(clients, 'python_client.py'), join(s.dataDir, 'admin.kubeconfig')]);
  t.equal(r.create_csi_driver, 'py.example.com');
  t.same(r.read_csi_driver, [true]);
  t.same(r.list_csi_driver, ['py.example.com']);
  t.same(r.patch_csi_driver, { by: 'python' });
  t.equal(r.delete_csi_driver, 'py.example.com', 'delete answers with the removed CSIDriver, as upstream');
  t.equal(r.create_lease, 'python');
  t.same(r.list_lease, ['py-lease']);
  t.equal(r.leader_election, 'python-candidate', 'its leader election acquires the lock');
  t.equal(r.create_cluster_role, 'py-reader', 'RbacAuthorizationV1Api under rbac.authorization.k8s.io');
  t.same(r.read_cluster_role, [['storage.k8s.io']], 'the rule keeps the group as written');
  t.equal(r.create_cluster_role_binding, 'rbac.authorization.k8s.io', 'the roleRef reads in the spelling of the path');
});

t.test('@kubernetes/client-node (Node 22): typed storage, coordination and core APIs, and a watch', async (t) => {
  const s = await startServer(['--authorization-mode=AlwaysAllow']);
  t.teardown(() => s.stop());
  const r = await runClient(join(clients, 'node_modules', '.bin', 'node'), [join(clients, 'client_node.mjs'), join(s.dataDir, 'admin.kubeconfig')]);
  t.equal(r.createCSIDriver, 'node.example.com');
  t.same(r.readCSIDriver, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', podInfoOnMount: true }, 'decoded by upstream apiVersion');
  t.same(r.listCSIDriver, ['node.example.com']);
  t.equal(r.deleteCSIDriver, 'node.example.com');
  t.equal(r.createLease, 'client-node');
  t.equal(r.replaceLease, 'someone-else');
  t.same(r.listNamespaces, ['default', 'svc-node-lease', 'svc-public', 'svc-system']);
  t.equal(r.createConfigMap, 'b');
  t.same(r.watchConfigMaps, ['ADDED node-cm']);
  t.equal(r.createClusterRole, 'node-reader', 'RbacAuthorizationV1Api under rbac.authorization.k8s.io');
});
