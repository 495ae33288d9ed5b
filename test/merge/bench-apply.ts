/**
 * Measures one server-side apply of a ~5 KB object that three managers own (an applier, a second
 * applier and an updater), next to the update bookkeeping a PUT pays. Not a test; run by hand:
 *   node dist-merge/test/merge/bench-apply.js
 */
import type { ApiObject } from '../../core/api/types.js';
import { applyPatch, updateManagedFields } from '../../core/merge/field-manager.js';
import { objectMetaSchema } from '../../core/schema/meta.js';
import { s } from '../../core/schema/schema.js';

const envVar = s.struct('EnvVar', { name: s.string(), value: s.string() });
const port = s.struct('ContainerPort', { name: s.string(), containerPort: s.int32(), protocol: s.string() });
const mount = s.struct('VolumeMount', { name: s.string(), mountPath: s.string(), readOnly: s.boolean() });
const resources = s.struct('Resources', { limits: s.map(s.quantity()), requests: s.map(s.quantity()) });
const container = s.struct('Container', {
  name: s.string(),
  image: s.string(),
  args: s.list(s.string()),
  env: s.list(envVar, { patchStrategy: 'merge', patchMergeKey: 'name' }),
  ports: s.list(port, { listType: 'map', listMapKeys: ['containerPort', 'protocol'] }),
  volumeMounts: s.list(mount, { patchStrategy: 'merge', patchMergeKey: 'mountPath' }),
  resources,
  imagePullPolicy: s.string(),
});
const volume = s.struct('Volume', { name: s.string(), configMap: s.struct('ConfigMapSource', { name: s.string() }) });
const podSpec = s.struct('PodSpec', {
  containers: s.list(container, { patchStrategy: 'merge', patchMergeKey: 'name' }),
  volumes: s.list(volume, { patchStrategy: 'merge,retainKeys', patchMergeKey: 'name' }),
  nodeSelector: s.map(s.string(), { mapType: 'atomic' }),
  serviceAccountName: s.string(),
});
const schema = s.struct('Deployment', {
  apiVersion: s.string(),
  kind: s.string(),
  metadata: objectMetaSchema,
  spec: s.struct('DeploymentSpec', {
    replicas: s.int32({ ptr: true }),
    selector: s.struct('LabelSelector', { matchLabels: s.map(s.string()) }, { mapType: 'atomic' }),
    template: s.struct('PodTemplate', { metadata: objectMetaSchema, spec: podSpec }),
  }),
  status: s.struct('DeploymentStatus', { replicas: s.int32(), readyReplicas: s.int32(), observedGeneration: s.int64() }),
});

function config(tag: number): ApiObject {
  const containers = [0, 1, 2].map((c) => ({
    name: `c${c}`,
    image: `registry.example.com/team/app-${c}:v${tag}`,
    args: ['--verbose', '--port=8080', `--instance=${c}`],
    env: Array.from({ length: 12 }, (_, i) => ({ name: `ENV_${c}_${i}`, value: `value-${c}-${i}-some-longer-text` })),
    ports: [
      { name: 'http', containerPort: 8080 + c, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9090 + c, protocol: 'TCP' },
    ],
    volumeMounts: [{ name: 'config', mountPath: `/etc/app-${c}`, readOnly: true }],
    resources: { limits: { cpu: '500m', memory: '256Mi' }, requests: { cpu: '100m', memory: '128Mi' } },
  }));
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'default', labels: { app: 'web', tier: 'frontend', team: 'a' }, annotations: { note: 'x'.repeat(1100) } },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web', tier: 'frontend' } },
        spec: { containers, volumes: [{ name: 'config', configMap: { name: 'web-config' } }], serviceAccountName: 'web' },
      },
    },
  };
}

const now = (i: number): string => new Date(Date.UTC(2025, 0, 1, 0, 0, i % 60)).toISOString().replace(/\.\d{3}Z$/, 'Z');
const base = { apiVersion: 'apps/v1', schema };

let live = applyPatch(null, config(0), { ...base, manager: 'kubectl', force: false, now: now(0) });
live = { ...live, metadata: { ...live.metadata, uid: 'u1', resourceVersion: '1', creationTimestamp: now(0) } };
const scaled = structuredClone(live) as ApiObject;
(scaled.spec as { replicas: number }).replicas = 5;
scaled.status = { replicas: 5, readyReplicas: 5, observedGeneration: 2 };
live = updateManagedFields(live, scaled, { ...base, manager: 'controller', now: now(1) });
live = applyPatch(live, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', labels: { owner: 'ops' } } }, { ...base, manager: 'ops', force: false, now: now(2) });
(config(0).spec as { replicas?: number }).replicas = undefined;

const size = JSON.stringify(live).length;
const managers = live.metadata.managedFields?.map((m) => `${m.manager}/${m.operation}`).join(', ');

/** Times `fn` over fresh copies of its inputs, as each request decodes its own objects. */
/** Best batch mean of 12 batches of 400 runs: the machine is shared, the best batch is the least disturbed. */
function bench<T>(label: string, inputs: () => T, fn: (input: T) => void): void {
  for (let i = 0; i < 500; i++) fn(inputs());
  let best = Infinity;
  for (let b = 0; b < 12; b++) {
    let ns = 0n;
    for (let i = 0; i < 400; i++) {
      const x = inputs();
      const t0 = process.hrtime.bigint();
      fn(x);
      ns += process.hrtime.bigint() - t0;
    }
    best = Math.min(best, Number(ns) / 1000 / 400);
  }
  console.log(`${label.padEnd(52)} ${best.toFixed(1)} µs/op`);
}

const applyOpts = { ...base, manager: 'kubectl', force: true, now: now(3) };
const cfgText = [JSON.stringify(config(0)), JSON.stringify(config(1))];
const liveText = JSON.stringify(live);
const parse = (t: string): ApiObject => JSON.parse(t) as ApiObject;

console.log(`object ${size - JSON.stringify(live.metadata.managedFields).length} bytes + ${JSON.stringify(live.metadata.managedFields).length} bytes of managedFields, managers: ${managers}`);

/** A stored copy of `o` at a new resourceVersion, as the next request reads it from storage. */
let rv = 100;
const storedCopy = (o: ApiObject, uid = 'u1'): ApiObject => {
  const c = parse(JSON.stringify(o));
  c.metadata.resourceVersion = String(rv++);
  c.metadata.uid = uid;
  return c;
};

// Each request reads the object the previous one stored.
let current = live;
bench('apply, same config again (no-op)', () => [storedCopy(current), parse(cfgText[0]!)] as const, ([l, c]) => (current = applyPatch(l, c, applyOpts)));
let i = 0;
bench('apply, image tags changed every time', () => [storedCopy(current), parse(cfgText[i++ % 2]!)] as const, ([l, c]) => (current = applyPatch(l, c, applyOpts)));
let n = 0;
bench('apply to an object not seen before (cold decode)', () => [storedCopy(live, `cold-${n++}`), parse(cfgText[1]!)] as const, ([l, c]) => applyPatch(l, c, applyOpts));
let j = 0;
bench('update (PUT bookkeeping), a label changed every time', () => {
  const l = storedCopy(current);
  const p = parse(JSON.stringify(l));
  (p.metadata.labels as Record<string, string>).extra = String(j++);
  return [l, p] as const;
}, ([l, p]) => (current = updateManagedFields(l, p, { ...base, manager: 'kubectl-edit', now: now(4) })));
bench('JSON.parse of the object (for scale)', () => liveText, (t) => JSON.parse(t));
