/**
 * The garbage collector following kinds served later (custom resources, once their definitions are
 * established): a collector of its own, built on a real server's registry client and listers (the
 * server's own collector off), starts without CSIDriver; a config map naming a CSIDriver owner is kept
 * as naming an unknown kind, then collected once the kind is added, and kept again (unknown) once the
 * kind is removed.
 */
import t from 'tap';
import { GarbageCollector, garbageCollectorIdentity } from '../../core/controllers/garbage-collector.js';
import { RegistryClient } from '../../core/registry/client.js';
import { resourcePrefix } from '../../core/registry/keys.js';
import { Listers } from '../../core/registry/lister.js';
import type { ResourceType } from '../../core/registry/resource-type.js';
import { builtinResourceTypes } from '../../core/registry/catalog.js';
import type { Cacher } from '../../core/storage/cacher.js';
import type { Executor } from '../../core/registry/task.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { eventually, getObj, gone, WarningLog } from '../helpers/owners.js';

const CM = '/api/v1/namespaces/default/configmaps';
const CSI = '/apis/storage.svc.io/v1/csidrivers';

let s: TestServer;
let gc: GarbageCollector;
let log: WarningLog;
t.before(async () => {
  log = new WarningLog();
  s = await startServer(['--controllers=*,-garbagecollector']);
  // the server's parts a controller is given (private to ApiServer; reached here on purpose)
  const inner = s.server as unknown as { cacher: Cacher; executor: Executor };
  const client = new RegistryClient(inner.executor, (rev) => inner.cacher.notifyCommitted(rev));
  const listers = new Listers((rt) => inner.cacher.cacheFor(resourcePrefix(rt)));
  const withoutCsi = builtinResourceTypes.filter((rt) => rt.plural !== 'csidrivers');
  gc = new GarbageCollector(client.as(garbageCollectorIdentity), listers, () => inner.cacher.syncConsistent(), withoutCsi);
  gc.start();
});
t.teardown(async () => {
  gc?.stop();
  await s?.stop();
  log.restore();
});

const csiType = (): ResourceType => builtinResourceTypes.find((rt) => rt.plural === 'csidrivers')!;

async function dependentOfMissingDriver(name: string): Promise<void> {
  const r = await s.admin.post(CM, {
    metadata: { name, ownerReferences: [{ apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver', name: 'missing.csi.example.com', uid: '12121212-3434-5656-7878-909090909090' }] },
  });
  if (r.status !== 201) throw new Error(r.text);
}

t.test('a kind added later: dependents naming it are looked at again', async (t) => {
  await dependentOfMissingDriver('later-dep');
  t.ok(await eventually(() => log.has(/later-dep .*names a kind this server does not serve/)), 'kept while the kind is unknown (logged)');
  t.ok(await getObj(s.admin, `${CM}/later-dep`));
  gc.addType(csiType());
  t.ok(await gone(s.admin, `${CM}/later-dep`), 'collected once the kind is known and the owner found absent');
});

t.test("a kind added later: its objects' dependents are followed", async (t) => {
  const owner = (await s.admin.post(CSI, { metadata: { name: 'owner.csi.example.com' }, spec: {} })).json;
  const ref = { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name, uid: owner.metadata.uid };
  t.equal((await s.admin.post(CM, { metadata: { name: 'csi-dep', ownerReferences: [ref] } })).status, 201);
  t.equal((await s.admin.delete(`${CSI}/owner.csi.example.com`)).status, 200);
  t.ok(await gone(s.admin, `${CM}/csi-dep`), 'collected after the owner of the new kind went');
});

t.test('a kind removed: references to it name an unknown kind again, dependents kept', async (t) => {
  gc.removeType(csiType());
  await dependentOfMissingDriver('after-removal');
  t.ok(await eventually(() => log.has(/after-removal .*names a kind this server does not serve/)), 'logged as an unknown kind');
  t.ok(await getObj(s.admin, `${CM}/after-removal`), 'kept');
});
