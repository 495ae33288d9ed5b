/**
 * Admission: the built-in admission steps this server runs. NamespaceLifecycle: new namespaced
 * content needs an existing namespace that is not terminating; the system namespaces cannot be
 * deleted. NodeRestriction: a node creates only its own Lease (and CSINode).
 */
import { errors, type StatusError } from '../api/status.js';
import type { ApiObject, UserInfo } from '../api/types.js';
import { nodeRestrictionOnCreate } from '../authz/node.js';
import { parseStored } from '../codec/object-bytes.js';
import type { Store } from '../storage/interface.js';
import { isNamespaceTerminating, namespaces } from './core/namespaces.js';
import type { Cacher } from '../storage/cacher.js';
import { resourceId } from './context.js';
import { objectKey, resourcePrefix } from './keys.js';
import { groupResourceOf, type ResourceType } from './resource-type.js';

/** A namespace as this server's watch cache holds it, sent with a write task so that admission need not ask the store. */
export interface NamespaceSeen {
  name: string;
  terminating: boolean;
}

/**
 * NamespaceLifecycle: `seen` is the namespace as the main thread's watch cache holds it (upstream's
 * admission reads its informer the same way); without it, the namespace as the nearest store member
 * has it (no consensus round trip on etcd), which also finds a namespace created a moment ago elsewhere.
 */
export async function admitCreate(store: Store, rt: ResourceType, obj: ApiObject, seen?: NamespaceSeen): Promise<void> {
  if (!rt.namespaced || rt.skipNamespaceLifecycle) return;
  const ns = obj.metadata.namespace ?? '';
  if (seen?.name === ns) {
    if (seen.terminating) throw namespaceTerminating(rt, obj, ns);
    return;
  }
  const kv = await store.get(objectKey(namespaces, '', ns), { serializable: true });
  if (!kv) throw errors.notFound({ group: '', resource: 'namespaces' }, ns);
  if (isTerminating(ns, kv.modRevision, kv.value)) throw namespaceTerminating(rt, obj, ns);
}

function namespaceTerminating(rt: ResourceType, obj: ApiObject, ns: string): StatusError {
  const e = errors.forbidden(groupResourceOf(rt), obj.metadata.name ?? '', `unable to create new content in namespace ${ns} because it is being terminated`);
  e.status.details!.causes = [{ reason: 'NamespaceTerminating', message: `namespace ${ns} is being terminated`, field: 'metadata.namespace' }];
  return e;
}

/** What a watch cache holds of one key (core/storage/watch-cache.ts CachedObject). */
interface CachedNamespace {
  revision: number;
  stored: Uint8Array;
  unreadable?: string;
}

/**
 * The namespaces of the main thread's watch cache, for NamespaceLifecycle. A namespace is answered
 * from the cache only while the cache holds every namespace write this server acknowledged, so a
 * create right after this server deleted its namespace is refused as before; a namespace the cache
 * does not hold (created a moment ago on another server) is left to the store read.
 */
export class NamespaceCacheView {
  /** Highest revision of a namespace write this server acknowledged. */
  private writtenAt = 0;

  constructor(
    /** The id (`group/version/plural`) of the namespaces resource, whose writes are tracked. */
    private readonly namespacesResource: string,
    private readonly lookup: (name: string) => CachedNamespace | undefined,
    /** The revision the cache reflects, or undefined while it cannot be trusted (its feed failed). */
    private readonly cacheRevision: () => number | undefined,
  ) {}

  seen(name: string): NamespaceSeen | undefined {
    const at = this.cacheRevision();
    if (at === undefined || at < this.writtenAt) return undefined;
    const o = this.lookup(name);
    if (!o || o.unreadable) return undefined;
    return { name, terminating: isTerminating(name, o.revision, o.stored) };
  }

  /** A task on `resource` committed `revision`. */
  committed(resource: string, revision: number): void {
    if (resource === this.namespacesResource && revision > this.writtenAt) this.writtenAt = revision;
  }
}

/** NodeRestriction on create: the names the node authorizer cannot check (it does not see the body). */
export function admitNodeCreate(user: UserInfo, rt: ResourceType, obj: ApiObject): void {
  const name = obj.metadata.name ?? '';
  const reason = nodeRestrictionOnCreate(user, rt.group, rt.plural, obj.metadata.namespace ?? '', name);
  if (reason) throw errors.forbidden(groupResourceOf(rt), name, reason);
}

/** Terminating state per namespace, keyed by the namespace's revision (parsed once per version). */
const terminating = new Map<string, { revision: number; terminating: boolean }>();

function isTerminating(ns: string, revision: number, value: Uint8Array): boolean {
  const memo = terminating.get(ns);
  if (memo && memo.revision === revision) return memo.terminating;
  const t = isNamespaceTerminating(parseStored(value));
  if (terminating.size > 10_000) terminating.clear();
  terminating.set(ns, { revision, terminating: t });
  return t;
}

/** The view of the namespaces in `cacher`'s watch cache. */
export function namespaceCacheView(cacher: Cacher): NamespaceCacheView {
  const prefix = resourcePrefix(namespaces);
  return new NamespaceCacheView(
    resourceId(namespaces),
    (name) => (cacher.has(prefix) ? cacher.cacheFor(prefix).get(objectKey(namespaces, '', name)) : undefined),
    () => (cacher.healthy ? cacher.revision : undefined),
  );
}

export function admitDelete(rt: ResourceType, name: string): void {
  if (rt.deletion?.protectedNames?.includes(name)) throw errors.forbidden(groupResourceOf(rt), name, 'this namespace may not be deleted');
}
