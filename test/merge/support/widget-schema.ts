/**
 * The test kind used by the SSA scenarios: one field of every merge flavour (atomic/set/map lists,
 * a map list with two keys, a patchStrategy=merge list, atomic/granular maps and structs, an untyped
 * field, nested map lists) under the real ObjectMeta schema.
 */
import { objectMetaSchema } from '../../../core/schema/meta.js';
import { s } from '../../../core/schema/schema.js';

export const portSchema = s.struct('Port', { containerPort: s.int32(), protocol: s.string(), name: s.string() });

export const envVarSchema = s.struct('EnvVar', { name: s.string(), value: s.string() });

export const resourcesSchema = s.struct('Resources', { cpu: s.string(), memory: s.string() }, { mapType: 'atomic' });

export const containerSchema = s.struct('Container', {
  name: s.string(),
  image: s.string(),
  command: s.list(s.string()),
  ports: s.list(portSchema, { listType: 'map', listMapKeys: ['containerPort', 'protocol'] }),
  env: s.list(envVarSchema, { patchStrategy: 'merge', patchMergeKey: 'name' }),
  resources: resourcesSchema,
});

export const strategySchema = s.struct('Strategy', { type: s.string(), maxSurge: s.intOrString() });

export const templateSchema = s.struct('Template', { image: s.string(), pullPolicy: s.string() }, { mapType: 'atomic' });

export const widgetSpecSchema = s.struct('WidgetSpec', {
  replicas: s.int32(),
  color: s.string(),
  paused: s.boolean(),
  selector: s.map(s.string(), { mapType: 'atomic' }),
  settings: s.map(s.string()),
  tags: s.list(s.string(), { listType: 'set' }),
  args: s.list(s.string()),
  owners: s.list(s.string(), { patchStrategy: 'merge' }),
  containers: s.list(containerSchema, { listType: 'map', listMapKeys: ['name'] }),
  strategy: strategySchema,
  template: templateSchema,
  extra: s.untyped(),
});

export const widgetSchema = s.struct('Widget', {
  apiVersion: s.string(),
  kind: s.string(),
  metadata: objectMetaSchema,
  spec: widgetSpecSchema,
});

/** The same kind with `spec.strategy` atomic, for merge-type change scenarios. */
export const widgetSchemaAtomicStrategy = s.struct('Widget', {
  ...widgetSchema.fields,
  spec: s.struct('WidgetSpec', { ...widgetSpecSchema.fields, strategy: s.struct('Strategy', strategySchema.fields, { mapType: 'atomic' }) }),
});
