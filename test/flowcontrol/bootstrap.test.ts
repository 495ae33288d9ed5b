import t from 'tap';
import type { ApiObject } from '../../core/api/types.js';
import { AUTO_UPDATE_ANNOTATION, mandatoryFlowSchemas, mandatoryPriorityLevels, suggestedFlowSchemas, suggestedPriorityLevels } from '../../core/flowcontrol/bootstrap.js';
import { danglingCondition, parseGoBool, reviseBootstrapObject } from '../../core/flowcontrol/ensurer.js';
import { flowSchemas } from '../../core/registry/flowcontrol/flowschemas.js';
import { priorityLevelConfigurations } from '../../core/registry/flowcontrol/prioritylevelconfigurations.js';
import { startServer, tempDir } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { create } from '../registry/kind-harness.js';

const FS = '/apis/flowcontrol.apiserver.svc.io/v1/flowschemas';
const PL = '/apis/flowcontrol.apiserver.svc.io/v1/prioritylevelconfigurations';

t.test("upstream v1.32's levels: type, shares, lendable percent and queuing", async (t) => {
  // name, type, nominalConcurrencyShares, lendablePercent, [queues, handSize, queueLengthLimit] or Reject
  const want: [string, string, number, number, [number, number, number] | 'Reject' | undefined][] = [
    ['exempt', 'Exempt', 0, 0, undefined],
    ['catch-all', 'Limited', 5, 0, 'Reject'],
    ['system', 'Limited', 30, 33, [64, 6, 50]],
    ['node-high', 'Limited', 40, 25, [64, 6, 50]],
    ['leader-election', 'Limited', 10, 0, [16, 4, 50]],
    ['workload-high', 'Limited', 40, 50, [128, 6, 50]],
    ['workload-low', 'Limited', 100, 90, [128, 6, 50]],
    ['global-default', 'Limited', 20, 50, [128, 6, 50]],
  ];
  const got = [...mandatoryPriorityLevels, ...suggestedPriorityLevels].map((p) => {
    const s = p.spec;
    const shares = s.exempt?.nominalConcurrencyShares ?? s.limited?.nominalConcurrencyShares;
    const lend = s.exempt?.lendablePercent ?? s.limited?.lendablePercent;
    const q = s.limited?.limitResponse?.queuing;
    const resp = s.limited ? (q ? [q.queues, q.handSize, q.queueLengthLimit] : s.limited.limitResponse?.type) : undefined;
    return [p.metadata.name, s.type, shares, lend, resp];
  });
  t.same(got, want);
  for (const p of [...mandatoryPriorityLevels, ...suggestedPriorityLevels]) {
    const out = create(priorityLevelConfigurations, { apiVersion: 'flowcontrol.apiserver.svc.io/v1', kind: 'PriorityLevelConfiguration', ...structuredClone(p) } as unknown as ApiObject);
    t.same(out.errors, [], `${p.metadata.name} is valid`);
    t.same((out.obj as unknown as { spec: unknown }).spec, p.spec, `${p.metadata.name}: defaulting changes nothing`);
  }
});

t.test("upstream v1.32's FlowSchemas: level, precedence, distinguisher and subjects, in the svc spelling", async (t) => {
  const subjects = (f: (typeof mandatoryFlowSchemas)[number]) =>
    (f.spec.rules ?? []).flatMap((r) => r.subjects.map((s) => (s.user ? `user:${s.user.name}` : s.group ? `group:${s.group.name}` : `sa:${s.serviceAccount!.namespace}/${s.serviceAccount!.name}`)));
  const want: [string, string, number, string, string[]][] = [
    ['exempt', 'exempt', 1, '', ['group:system:masters']],
    ['catch-all', 'catch-all', 10000, 'ByUser', ['group:system:unauthenticated', 'group:system:authenticated']],
    ['system-nodes', 'system', 500, 'ByUser', ['group:system:nodes']],
    ['system-node-high', 'node-high', 400, 'ByUser', ['group:system:nodes']],
    ['probes', 'exempt', 2, '', ['group:system:unauthenticated', 'group:system:authenticated']],
    ['system-leader-election', 'leader-election', 100, 'ByUser', ['user:system:svc-controller-manager', 'user:system:svc-scheduler', 'sa:svc-system/*']],
    ['workload-leader-election', 'leader-election', 200, 'ByUser', ['sa:svc-system/*']],
    ['endpoint-controller', 'workload-high', 150, 'ByUser', ['user:system:svc-controller-manager', 'sa:svc-system/endpoint-controller', 'sa:svc-system/endpointslicemirroring-controller']],
    ['kube-controller-manager', 'workload-high', 800, 'ByNamespace', ['user:system:svc-controller-manager']],
    ['kube-scheduler', 'workload-high', 800, 'ByNamespace', ['user:system:svc-scheduler']],
    ['kube-system-service-accounts', 'workload-high', 900, 'ByNamespace', ['sa:svc-system/*']],
    ['service-accounts', 'workload-low', 9000, 'ByUser', ['group:system:serviceaccounts']],
    ['global-default', 'global-default', 9900, 'ByUser', ['group:system:unauthenticated', 'group:system:authenticated']],
  ];
  const all = [...mandatoryFlowSchemas, ...suggestedFlowSchemas];
  t.same(
    all.map((f) => [f.metadata.name, f.spec.priorityLevelConfiguration.name, f.spec.matchingPrecedence, f.spec.distinguisherMethod?.type ?? '', subjects(f)]),
    want,
  );
  const nodeHigh = all.find((f) => f.metadata.name === 'system-node-high')!;
  t.same(nodeHigh.spec.rules![0]!.resourceRules!.map((r) => `${r.apiGroups.join()}:${r.resources.join()}`), [':nodes,nodes/status', 'coordination.svc.io:leases'], 'node heartbeats (leases) go to node-high');
  t.same(all.find((f) => f.metadata.name === 'probes')!.spec.rules![0]!.nonResourceRules, [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/readyz', '/livez'] }]);
  for (const f of all) t.same(create(flowSchemas, { apiVersion: 'flowcontrol.apiserver.svc.io/v1', kind: 'FlowSchema', ...structuredClone(f) } as unknown as ApiObject).errors, [], `${f.metadata.name} is valid`);
});

t.test("upstream v1.32's FlowSchemas: every rule, resource and non-resource, in the svc spelling", async (t) => {
  // verbs groups resources namespaces [cluster] per resource rule; verbs urls per non-resource rule
  const ALL_RES = '* * * * cluster';
  const ALL_NONRES = 'url * *';
  const LEASES = 'get,create,update coordination.svc.io leases *';
  const want: Record<string, string[]> = {
    exempt: [ALL_RES, ALL_NONRES],
    'catch-all': [ALL_RES, ALL_NONRES],
    'system-nodes': [ALL_RES, ALL_NONRES],
    'system-node-high': ['* "" nodes,nodes/status * cluster', '* coordination.svc.io leases *'],
    probes: ['url get /healthz,/readyz,/livez'],
    // v1.32: Leases only; the workloads' schema still has the Endpoints and ConfigMaps locks
    'system-leader-election': [LEASES],
    'workload-leader-election': ['get,create,update "" endpoints,configmaps *', LEASES],
    'endpoint-controller': ['get,create,update "" endpoints *'],
    'kube-controller-manager': [ALL_RES, ALL_NONRES],
    'kube-scheduler': [ALL_RES, ALL_NONRES],
    'kube-system-service-accounts': [ALL_RES, ALL_NONRES],
    'service-accounts': [ALL_RES, ALL_NONRES],
    'global-default': [ALL_RES, ALL_NONRES],
  };
  const list = (xs: readonly string[]) => xs.map((x) => (x === '' ? '""' : x)).join(',');
  for (const f of [...mandatoryFlowSchemas, ...suggestedFlowSchemas]) {
    t.equal(f.spec.rules!.length, 1, `${f.metadata.name}: one rule with subjects`);
    const r = f.spec.rules![0]!;
    const got = [
      ...(r.resourceRules ?? []).map((x) => `${list(x.verbs)} ${list(x.apiGroups)} ${list(x.resources)} ${list(x.namespaces ?? [])}${x.clusterScope ? ' cluster' : ''}`),
      ...(r.nonResourceRules ?? []).map((x) => `url ${list(x.verbs)} ${list(x.nonResourceURLs)}`),
    ];
    t.same(got, want[f.metadata.name], f.metadata.name);
  }
});

t.test("the ensurer's decisions, as upstream's: mandatory always restored, suggested by the annotation or an untouched generation", async (t) => {
  const want = suggestedPriorityLevels[0]!;
  const stored = (annotation: string | undefined, generation: number, changed: boolean): ApiObject =>
    ({
      metadata: { name: want.metadata.name, generation, ...(annotation === undefined ? {} : { annotations: { [AUTO_UPDATE_ANNOTATION]: annotation } }) },
      spec: changed ? { ...structuredClone(want.spec), limited: { ...want.spec.limited, nominalConcurrencyShares: 1 } } : structuredClone(want.spec),
    }) as unknown as ApiObject;
  const rows: [string, ApiObject | undefined, boolean, string, string | undefined, boolean][] = [
    // name, stored, mandatory, op, annotation after, spec restored
    ['missing: created with the annotation true', undefined, false, 'create', 'true', true],
    ['suggested, annotation true, changed: spec restored', stored('true', 2, true), false, 'update', 'true', true],
    ['suggested, annotation false, changed: left alone', stored('false', 2, true), false, 'none', 'false', false],
    ['suggested, no annotation, generation 1: spec restored, annotation true', stored(undefined, 1, true), false, 'update', 'true', true],
    ['suggested, no annotation, changed by a user (generation 2): annotation false, spec kept', stored(undefined, 2, true), false, 'update', 'false', false],
    ['suggested, annotation not a boolean, generation 3: annotation false, spec kept', stored('maybe', 3, true), false, 'update', 'false', false],
    ['suggested, as bootstrapped: nothing to do', stored('true', 1, false), false, 'none', 'true', true],
    ['mandatory, annotation false, changed: restored anyway, annotation true', stored('false', 2, true), true, 'update', 'true', true],
  ];
  for (const [name, current, mandatory, op, annotation, restored] of rows) {
    const r = reviseBootstrapObject(current, want, mandatory);
    t.equal(r.op, op, `${name}: ${op}`);
    const after = r.op === 'none' ? current! : r.object;
    t.equal(after.metadata.annotations?.[AUTO_UPDATE_ANNOTATION], annotation, `${name}: annotation`);
    t.equal(JSON.stringify((after as unknown as { spec: unknown }).spec) === JSON.stringify(want.spec), restored, `${name}: spec ${restored ? 'is the bootstrap one' : 'kept'}`);
  }
  t.same(['1', 't', 'True', 'FALSE', '0', 'yes', ''].map(parseGoBool), [true, true, true, false, false, undefined, undefined], "Go's ParseBool spellings");
  t.same(danglingCondition({ spec: { priorityLevelConfiguration: { name: 'gone' } } }, false), {
    type: 'Dangling',
    status: 'True',
    reason: 'NotFound',
    message: 'This FlowSchema references the PriorityLevelConfiguration object named "gone" but there is no such object',
  });
  t.same(danglingCondition({ spec: { priorityLevelConfiguration: { name: 'system' } } }, true), {
    type: 'Dangling',
    status: 'False',
    reason: 'Found',
    message: 'This FlowSchema references the PriorityLevelConfiguration object named "system" and it exists',
  }, "upstream's words when the level exists");
});

t.test('a real server keeps the configuration at every start: mandatory objects restored, suggested ones as annotated, Dangling maintained', async (t) => {
  const dir = tempDir();
  let s = await startServer([], dir);
  const names = async (path: string) => ((await s.admin.get(path)).json.items as ApiObject[]).map((o) => o.metadata.name).sort();
  t.same(await names(PL), [...mandatoryPriorityLevels, ...suggestedPriorityLevels].map((p) => p.metadata.name).sort(), 'every level is stored');
  t.same(await names(FS), [...mandatoryFlowSchemas, ...suggestedFlowSchemas].map((p) => p.metadata.name).sort(), 'every FlowSchema is stored');
  const exemptFs = (await s.admin.get(`${FS}/exempt`)).json;
  t.equal(exemptFs.metadata.annotations[AUTO_UPDATE_ANNOTATION], 'true');
  // changes an administrator makes
  const put = async (path: string, mutate: (o: Record<string, any>) => void) => {
    const o = (await s.admin.get(path)).json;
    mutate(o);
    const r = await s.admin.put(path, o);
    t.equal(r.status, 200, `PUT ${path}: ${r.text.slice(0, 200)}`);
  };
  const refused = await s.admin.put(`${PL}/catch-all`, { ...(await s.admin.get(`${PL}/catch-all`)).json, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 50, limitResponse: { type: 'Reject' } } } });
  t.equal(refused.status, 422, 'the mandatory catch-all level keeps its fixed spec');
  t.match(refused.json?.message, /spec of 'catch-all' must equal the fixed value/);
  await put(`${PL}/exempt`, (o) => (o.spec.exempt.nominalConcurrencyShares = 10));
  t.equal((await s.admin.delete(`${PL}/catch-all`)).status, 200, 'a mandatory level may be deleted');
  await put(`${PL}/workload-low`, (o) => {
    o.metadata.annotations[AUTO_UPDATE_ANNOTATION] = 'false';
    o.spec.limited.nominalConcurrencyShares = 7;
  });
  await put(`${PL}/global-default`, (o) => (o.spec.limited.nominalConcurrencyShares = 9));
  t.equal((await s.admin.delete(`${FS}/probes`)).status, 200);
  t.equal((await s.admin.post(FS, { metadata: { name: 'orphan' }, spec: { priorityLevelConfiguration: { name: 'no-such-level' }, rules: [{ subjects: [{ kind: 'User', user: { name: 'x' } }], nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/x'] }] }] } })).status, 201);
  t.ok(
    await waitFor(async () => (await s.admin.get(`${FS}/orphan`)).json.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Dangling' && c.status === 'True')),
    'a FlowSchema naming a missing level is marked Dangling',
  );
  t.equal((await s.admin.get(`${FS}/orphan`, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' })).json.rows[0].cells[5], 'True', 'MissingPL column');
  await s.stop();
  s = await startServer([], dir);
  t.teardown(() => s.stop());
  const after = async (name: string) => (await s.admin.get(`${PL}/${name}`)).json;
  t.equal((await after('catch-all')).spec.limited.nominalConcurrencyShares, 5, 'the deleted mandatory catch-all is created again');
  t.equal((await after('exempt')).spec.exempt.nominalConcurrencyShares, 10, "the exempt level's shares stay as the administrator set them (upstream's ensurer leaves spec.exempt)");
  t.equal((await after('workload-low')).spec.limited.nominalConcurrencyShares, 7, 'suggested with autoupdate-spec false: kept');
  t.equal((await after('global-default')).spec.limited.nominalConcurrencyShares, 20, 'suggested with autoupdate-spec true: restored');
  t.equal((await s.admin.get(`${FS}/probes`)).status, 200, 'a deleted suggested FlowSchema is created again');
  t.equal((await s.admin.get(`${FS}/orphan`)).status, 200, "the administrator's own FlowSchema stays");
  t.equal((await s.admin.post(PL, { metadata: { name: 'no-such-level' }, spec: { type: 'Limited', limited: { limitResponse: { type: 'Reject' } } } })).status, 201);
  t.ok(
    await waitFor(async () => (await s.admin.get(`${FS}/orphan`)).json.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Dangling' && c.status === 'False')),
    'once the level exists the condition turns False',
  );
});
