/**
 * A pod-like kind for strategic merge patch tests: patchStrategy=merge lists of maps and of scalars,
 * a merge,retainKeys list, replaced (unmarked) lists, a string map and the real ObjectMeta.
 */
import { objectMetaSchema } from '../../../core/schema/meta.js';
import { s } from '../../../core/schema/schema.js';

const port = s.struct('ContainerPort', { name: s.string(), containerPort: s.int32(), protocol: s.string() });
const envVar = s.struct('EnvVar', { name: s.string(), value: s.string() });

export const containerSchema = s.struct('Container', {
  name: s.string(),
  image: s.string(),
  args: s.list(s.string()),
  env: s.list(envVar, { patchStrategy: 'merge', patchMergeKey: 'name' }),
  ports: s.list(port, { patchStrategy: 'merge', patchMergeKey: 'containerPort', listType: 'map', listMapKeys: ['containerPort', 'protocol'] }),
});

const volume = s.struct('Volume', {
  name: s.string(),
  hostPath: s.struct('HostPathVolumeSource', { path: s.string() }),
  emptyDir: s.struct('EmptyDirVolumeSource', { medium: s.string() }),
});

export const podSchema = s.struct('Pod', {
  apiVersion: s.string(),
  kind: s.string(),
  metadata: objectMetaSchema,
  spec: s.struct('PodSpec', {
    containers: s.list(containerSchema, { patchStrategy: 'merge', patchMergeKey: 'name' }),
    volumes: s.list(volume, { patchStrategy: 'merge,retainKeys', patchMergeKey: 'name' }),
    nodeSelector: s.map(s.string()),
    tolerations: s.list(s.struct('Toleration', { key: s.string(), value: s.string() })),
    priority: s.int32(),
  }),
});
