/**
 * The definition controller: what upstream's apiextensions server runs beside its handlers, in one
 * loop over the CustomResourceDefinition lister.
 *   naming       status.acceptedNames: the requested names that no other definition of the group
 *                uses (NamesAccepted True NoConflicts, or False with the conflict);
 *   establishing once the names are accepted, the served versions' types are put in the type
 *                registry (routing, discovery, OpenAPI, the watch cache, listers and controllers follow)
 *                and Established becomes True; a definition whose serving changes (spec, accepted
 *                names, termination) has its types replaced, versions no longer served removed;
 *   api approval KubernetesAPIApprovalPolicyConformant for the protected `svc.io` groups;
 *   finalizer    a definition being deleted (cleanup finalizer) stops taking creates, has every object
 *                of its resource deleted, then loses the finalizer and is gone; its types go with it.
 */
import { StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { jsonEqual } from '../api/validation.js';
import type { RegistryClient, TypedClient } from '../registry/client.js';
import { resourceId } from '../registry/context.js';
import type { Lister, Listers } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';
import type { TypeRegistry } from '../registry/type-registry.js';
import { customResourceTypes } from './builder.js';
import { isProtectedGroup } from './validation.js';
import { API_APPROVED_ANNOTATION, CLEANUP_FINALIZER, type CRDCondition, type CRDNames, type CustomResourceDefinition, condition, isConditionTrue, setCondition } from './types.js';

export const apiextensionsIdentity = {
  user: { username: 'system:apiserver', groups: ['system:masters', 'system:authenticated'] },
  userAgent: 'svc-apiserver/apiextensions-controllers',
};

const CRD_ID = 'apiextensions.svc.io/v1/customresourcedefinitions';
type CRD = CustomResourceDefinition;

export interface DefinitionControllerDeps {
  client: RegistryClient;
  listers: Listers;
  types: TypeRegistry;
  now?(): Date;
  /** How often a definition being deleted is looked at again while its objects go. */
  cleanupIntervalMs?: number;
}

interface Served {
  signature: string;
  ids: Set<string>;
}

export class DefinitionController {
  private readonly client: TypedClient;
  private readonly crdType: ResourceType;
  private readonly crds: Lister<CRD>;
  private readonly served = new Map<string, Served>();
  private readonly queue = new Set<string>();
  private running = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly now: () => Date;

  constructor(private readonly d: DefinitionControllerDeps) {
    this.client = d.client.as(apiextensionsIdentity);
    this.crdType = d.types.get(CRD_ID)!;
    this.crds = d.listers.for<CRD>(this.crdType);
    this.now = d.now ?? (() => new Date());
  }

  /** Serves what the stored definitions say, then follows every change. */
  start(): Promise<void> {
    this.crds.onChange((ev) => {
      const name = (ev.object ?? ev.old)?.metadata.name;
      if (name) this.enqueue(name);
    });
    for (const crd of this.crds.list()) this.queue.add(crd.metadata.name!);
    const interval = this.d.cleanupIntervalMs ?? 250;
    this.timer = setInterval(() => {
      for (const crd of this.crds.list()) if (crd.metadata.deletionTimestamp) this.enqueue(crd.metadata.name!);
    }, interval);
    this.timer.unref();
    return this.drain();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
  }

  private enqueue(name: string): void {
    this.queue.add(name);
    if (!this.running) void this.drain();
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.size && !this.stopped) {
        const name = this.queue.values().next().value as string;
        this.queue.delete(name);
        try {
          await this.reconcile(name);
        } catch (err) {
          // a conflict means a newer version is on its way through the lister: it is looked at again then
          if (!(err instanceof StatusError && (err.code === 409 || err.code === 404))) console.error(`svc-apiserver: custom resource definition ${name}:`, err);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private async reconcile(name: string): Promise<void> {
    const live = this.crds.get('', name);
    if (!live) return this.unserve(name);
    const crd = structuredClone(live) as CRD;
    const revision = Number(crd.metadata.resourceVersion);
    const next = this.desiredStatus(crd);
    const accepted = condition(next, 'NamesAccepted')?.status === 'True';
    const establish = accepted && !isConditionTrue(crd, 'Established');
    if (establish) setCondition(next, { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' }, this.now());
    // types are served before Established is written, so a client that sees it can use the resource at once
    if (isConditionTrue(next, 'Established')) this.serve(next, revision);
    else this.unserve(name);
    if (!jsonEqual(next.status, crd.status)) {
      await this.client.update(this.crdType, next, { subresource: 'status' });
      return;
    }
    if (crd.metadata.deletionTimestamp && crd.metadata.finalizers?.includes(CLEANUP_FINALIZER)) await this.cleanup(crd);
  }

  /** The status the naming, establishing and approval rules give `crd` (a copy). */
  private desiredStatus(crd: CRD): CRD {
    const next = structuredClone(crd);
    const others = this.crds.list().filter((c) => c.metadata.name !== crd.metadata.name && c.spec.group === crd.spec.group) as CRD[];
    const { names, conflict } = acceptedNames(crd, others);
    next.status ??= {};
    next.status.acceptedNames = names;
    const now = this.now();
    if (conflict) setCondition(next, { type: 'NamesAccepted', status: 'False', ...conflict }, now);
    else setCondition(next, { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found' }, now);
    if (!isConditionTrue(crd, 'Established')) {
      setCondition(next, conflict ? { type: 'Established', status: 'False', reason: 'NotAccepted', message: 'not all names are accepted' } : { type: 'Established', status: 'False', reason: 'Installing', message: 'the initial names have been accepted' }, now);
    }
    if (isProtectedGroup(crd.spec.group)) {
      const a = crd.metadata.annotations?.[API_APPROVED_ANNOTATION];
      const c: Omit<CRDCondition, 'lastTransitionTime'> =
        a === undefined
          ? { type: 'KubernetesAPIApprovalPolicyConformant', status: 'False', reason: 'MissingAnnotation', message: `protected groups must have approval annotation ${JSON.stringify(API_APPROVED_ANNOTATION)}, see https://github.com/kubernetes/enhancements/pull/1111` }
          : a.startsWith('unapproved')
            ? { type: 'KubernetesAPIApprovalPolicyConformant', status: 'False', reason: 'UnapprovedAnnotation', message: `not approved: ${JSON.stringify(a)}` }
            : { type: 'KubernetesAPIApprovalPolicyConformant', status: 'True', reason: 'ApprovedAnnotation', message: `approved in ${a}` };
      setCondition(next, c, now);
    }
    return next;
  }

  /** Puts the served versions' types in the registry when what they serve changed; removes versions gone. */
  private serve(crd: CRD, revision: number): void {
    const name = crd.metadata.name!;
    const terminating = !!crd.metadata.deletionTimestamp;
    const signature = JSON.stringify([crd.spec, crd.status?.acceptedNames, terminating]);
    const have = this.served.get(name);
    if (have?.signature === signature) return;
    const types = customResourceTypes(crd, revision);
    const ids = new Set(types.map(resourceId));
    for (const rt of types) this.d.types.put(rt);
    for (const id of have?.ids ?? []) if (!ids.has(id)) this.d.types.remove(id);
    this.served.set(name, { signature, ids });
  }

  private unserve(name: string): void {
    const have = this.served.get(name);
    if (!have) return;
    for (const id of have.ids) this.d.types.remove(id);
    this.served.delete(name);
  }

  /** Deletes every object of the definition's resource; once none is left, removes the cleanup finalizer. */
  private async cleanup(crd: CRD): Promise<void> {
    const ids = this.served.get(crd.metadata.name!)?.ids;
    const rt = ids && [...ids].map((id) => this.d.types.get(id)).find((t): t is ResourceType => !!t);
    const remaining = rt ? this.d.listers.for(rt).list() : [];
    if (remaining.length) {
      if (condition(crd, 'Terminating')?.reason !== 'InstanceDeletionInProgress') {
        const next = structuredClone(crd);
        setCondition(next, { type: 'Terminating', status: 'True', reason: 'InstanceDeletionInProgress', message: 'CustomResource deletion is in progress' }, this.now());
        await this.client.update(this.crdType, next, { subresource: 'status' });
      }
      for (const obj of remaining) {
        if (obj.metadata.deletionTimestamp) continue;
        try {
          await this.client.delete(rt!, obj.metadata.namespace ?? '', obj.metadata.name!);
        } catch (err) {
          if (!(err instanceof StatusError && (err.code === 404 || err.code === 409))) throw err;
        }
      }
      return;
    }
    const done = structuredClone(crd);
    setCondition(done, { type: 'Terminating', status: 'False', reason: 'InstanceDeletionCompleted', message: 'removed all instances' }, this.now());
    if (!jsonEqual(done.status, crd.status)) {
      await this.client.update(this.crdType, done, { subresource: 'status' });
      return;
    }
    const next = structuredClone(crd) as ApiObject;
    next.metadata.finalizers = (next.metadata.finalizers ?? []).filter((f) => f !== CLEANUP_FINALIZER);
    await this.client.update(this.crdType, next);
  }
}

type Conflict = { reason: string; message: string } | undefined;

/**
 * The names `crd` may be served under, given the other definitions of its group (upstream's naming
 * controller): each requested name that none of them has accepted, or that this one already had.
 */
export function acceptedNames(crd: CRD, others: readonly CRD[]): { names: CRDNames; conflict: Conflict } {
  const requested = crd.spec.names;
  const accepted = crd.status?.acceptedNames ?? ({ plural: '', kind: '' } as CRDNames);
  const resources = new Set<string>();
  const kinds = new Set<string>();
  for (const o of others) {
    const n = o.status?.acceptedNames;
    if (!n) continue;
    for (const x of [n.plural, n.singular, ...(n.shortNames ?? [])]) if (x) resources.add(x);
    for (const x of [n.kind, n.listKind]) if (x) kinds.add(x);
  }
  const names: CRDNames = { ...accepted, plural: accepted.plural ?? '', kind: accepted.kind ?? '' };
  let conflict: Conflict;
  const take = (value: string | undefined, have: string | undefined, pool: Set<string>, reason: string, set: (v: string) => void): void => {
    if (!value) return;
    if (value !== have && pool.has(value)) {
      conflict ??= { reason, message: `${JSON.stringify(value)} is already in use` };
      return;
    }
    set(value);
  };
  take(requested.plural, accepted.plural, resources, 'PluralConflict', (v) => (names.plural = v));
  take(requested.singular, accepted.singular, resources, 'SingularConflict', (v) => (names.singular = v));
  const shortNames = requested.shortNames ?? [];
  const shortConflict = shortNames.find((s) => !(accepted.shortNames ?? []).includes(s) && resources.has(s));
  if (shortConflict) conflict ??= { reason: 'ShortNamesConflict', message: `${JSON.stringify(shortConflict)} is already in use` };
  else if (shortNames.length) names.shortNames = [...shortNames];
  else delete names.shortNames;
  take(requested.kind, accepted.kind, kinds, 'KindConflict', (v) => (names.kind = v));
  take(requested.listKind, accepted.listKind, kinds, 'ListKindConflict', (v) => (names.listKind = v));
  if (requested.categories?.length) names.categories = [...requested.categories];
  else delete names.categories;
  return { names, conflict };
}
