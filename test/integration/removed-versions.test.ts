import t from 'tap';
import { parseFlags } from '../../core/server/options.js';
import { servedTypesFor } from '../../core/registry/enablement.js';
import { startServer } from '../helpers/server.js';

/** spec/resource-api.md "Removed API versions": group version and one resource it served. */
const removed: [string, string][] = [
  ['flowcontrol.apiserver.svc.io/v1beta3', 'flowschemas'],
  ['flowcontrol.apiserver.svc.io/v1beta2', 'prioritylevelconfigurations'],
  ['flowcontrol.apiserver.svc.io/v1beta1', 'flowschemas'],
  ['storage.svc.io/v1beta1', 'csistoragecapacities'],
  ['autoscaling/v2beta2', 'horizontalpodautoscalers'],
  ['batch/v1beta1', 'cronjobs'],
  ['discovery.svc.io/v1beta1', 'endpointslices'],
  ['events.svc.io/v1beta1', 'events'],
  ['autoscaling/v2beta1', 'horizontalpodautoscalers'],
  ['policy/v1beta1', 'poddisruptionbudgets'],
  ['policy/v1beta1', 'podsecuritypolicies'],
  ['node.svc.io/v1beta1', 'runtimeclasses'],
  ['admissionregistration.svc.io/v1beta1', 'validatingwebhookconfigurations'],
  ['apiextensions.svc.io/v1beta1', 'customresourcedefinitions'],
  ['apiregistration.svc.io/v1beta1', 'apiservices'],
  ['authentication.svc.io/v1beta1', 'tokenreviews'],
  ['authorization.svc.io/v1beta1', 'subjectaccessreviews'],
  ['certificates.svc.io/v1beta1', 'certificatesigningrequests'],
  ['coordination.svc.io/v1beta1', 'leases'],
  ['extensions/v1beta1', 'ingresses'],
  ['networking.svc.io/v1beta1', 'ingresses'],
  ['rbac.authorization.svc.io/v1beta1', 'clusterroles'],
  ['scheduling.svc.io/v1beta1', 'priorityclasses'],
  ['storage.svc.io/v1beta1', 'csidrivers'],
];

t.test('no version of the spec\'s removed-versions table is served, under either group spelling', async (t) => {
  const served = new Set(servedTypesFor({}).map((rt) => `${rt.group ? `${rt.group}/` : ''}${rt.version}`));
  const s = await startServer();
  t.teardown(() => s.stop());
  for (const [gv, resource] of removed) {
    t.notOk(served.has(gv), `${gv} is not among the served types`);
    for (const spelling of new Set([gv, gv.replace('.svc.io/', '.k8s.io/')])) {
      const r = await s.admin.get(`/apis/${spelling}/${resource}`);
      t.equal(r.status, 404, `${spelling}/${resource}`);
      t.equal(r.json?.kind, 'Status', `${spelling}/${resource} answers a Status`);
      t.equal((await s.admin.get(`/apis/${spelling}`)).status, 404, `${spelling} discovery`);
    }
  }
});

t.test('--runtime-config naming a removed version is a start error naming it: the group version when the group is served, else the group', async (t) => {
  const groups = new Set(servedTypesFor({}).map((rt) => rt.group));
  for (const [gv] of removed) {
    const group = gv.split('/')[0]!;
    for (const value of ['true', 'false']) {
      t.throws(() => servedTypesFor({}, parseFlags([`--runtime-config=${gv}=${value}`]).runtimeConfig), { message: groups.has(group) ? `group version ${gv} that has not been registered` : `unknown api groups ${group}` }, `${gv}=${value}`);
    }
  }
});
