/**
 * The scale subresource of a custom resource: served as autoscaling/v1 Scale, its spec.replicas read
 * from and written to the definition's specReplicasPath, its status.replicas and status.selector read
 * from statusReplicasPath and labelSelectorPath, as upstream's scale of custom resources.
 */
import { type FieldError, fieldErrors } from '../api/field-errors.js';
import type { ApiObject } from '../api/types.js';
import { objectSchema } from '../schema/meta.js';
import { s } from '../schema/schema.js';
import type { SubresourceType } from '../registry/resource-type.js';
import type { ScaleSubresource } from './types.js';

export const scaleSchema = objectSchema(
  'io.svc.api.autoscaling.v1.Scale',
  {
    spec: s.struct('io.svc.api.autoscaling.v1.ScaleSpec', { replicas: s.int32({ description: 'The desired number of instances.' }) }, { description: 'The desired scale.' }),
    status: s.struct(
      'io.svc.api.autoscaling.v1.ScaleStatus',
      {
        replicas: s.int32({ always: true, description: 'The actual number of observed instances.' }),
        selector: s.string({ description: 'Label query over the pods counted in replicas, in the string form of a label selector.' }),
      },
      { description: 'The current scale.' },
    ),
  },
  [],
  'Scale of a resource.',
);

const steps = (path: string): string[] => path.replace(/^\./, '').split('.').filter(Boolean);

function get(obj: unknown, path: string): unknown {
  let v = obj;
  for (const k of steps(path)) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

function set(obj: Record<string, unknown>, path: string, value: unknown): void {
  const ks = steps(path);
  let v = obj;
  for (const k of ks.slice(0, -1)) {
    const next = v[k];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) v[k] = {};
    v = v[k] as Record<string, unknown>;
  }
  v[ks[ks.length - 1]!] = value;
}

export function scaleSubresource(sc: ScaleSubresource, validate: (obj: ApiObject, old: ApiObject | undefined) => FieldError[]): SubresourceType {
  return {
    verbs: ['get', 'patch', 'update'],
    prepareForUpdate() {
      // the object was already built from the sent Scale (view.fromView)
    },
    validateUpdate(next, old) {
      const replicas = get(next, sc.specReplicasPath);
      const errs: FieldError[] = [];
      if (typeof replicas === 'number' && replicas < 0) errs.push(fieldErrors.invalid('spec.replicas', replicas, 'must be greater than or equal to 0'));
      return [...errs, ...validate(next, old)];
    },
    view: {
      group: 'autoscaling',
      version: 'v1',
      kind: 'Scale',
      schema: scaleSchema,
      toView(obj) {
        const m = obj.metadata;
        const metadata: ApiObject['metadata'] = { name: m.name! };
        if (m.namespace) metadata.namespace = m.namespace;
        if (m.uid) metadata.uid = m.uid;
        if (m.resourceVersion) metadata.resourceVersion = m.resourceVersion;
        if (m.creationTimestamp) metadata.creationTimestamp = m.creationTimestamp;
        const spec: Record<string, unknown> = {};
        const want = get(obj, sc.specReplicasPath);
        if (typeof want === 'number') spec.replicas = want;
        const status: Record<string, unknown> = { replicas: typeof get(obj, sc.statusReplicasPath) === 'number' ? get(obj, sc.statusReplicasPath) : 0 };
        const selector = sc.labelSelectorPath ? get(obj, sc.labelSelectorPath) : undefined;
        if (typeof selector === 'string' && selector) status.selector = selector;
        return { kind: 'Scale', apiVersion: 'autoscaling/v1', metadata, spec, status };
      },
      fromView(view, obj) {
        const next = structuredClone(obj);
        const replicas = (view.spec as { replicas?: number } | undefined)?.replicas ?? 0;
        set(next as unknown as Record<string, unknown>, sc.specReplicasPath, replicas);
        if (view.metadata?.resourceVersion) next.metadata.resourceVersion = view.metadata.resourceVersion;
        else delete next.metadata.resourceVersion;
        if (view.metadata?.uid) next.metadata.uid = view.metadata.uid;
        return next;
      },
    },
  };
}
