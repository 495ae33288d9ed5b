/**
 * Admission: the built-in admission steps this server runs. NamespaceLifecycle: new namespaced
 * content needs an existing namespace that is not terminating; the system namespaces cannot be
 * deleted. NodeRestriction: a node creates only its own Lease (and CSINode).
 */
import { errors } from '../api/status.js';
import type { ApiObject, UserInfo } from '../api/types.js';
import { nodeRestrictionOnCreate } from '../authz/node.js';
import { parseStored } from '../codec/object-bytes.js';
import type { Store } from '../storage/interface.js';
import { isNamespaceTerminating, namespaces } from './core/namespaces.js';
import { objectKey } from './keys.js';
import { groupResourceOf, type ResourceType } from './resource-type.js';

export async function admitCreate(store: Store, rt: ResourceType, obj: ApiObject): Promise<void> {
  if (!rt.namespaced || rt.skipNamespaceLifecycle) return;
  const ns = obj.metadata.namespace ?? '';
  // as upstream's informer-backed check: the namespace as the nearest store member has it (no consensus round trip on etcd)
  const kv = await store.get(objectKey(namespaces, '', ns), { serializable: true });
  if (!kv) throw errors.notFound({ group: '', resource: 'namespaces' }, ns);
  if (isTerminating(ns, kv.modRevision, kv.value)) {
    const e = errors.forbidden(groupResourceOf(rt), obj.metadata.name ?? '', `unable to create new content in namespace ${ns} because it is being terminated`);
    e.status.details!.causes = [{ reason: 'NamespaceTerminating', message: `namespace ${ns} is being terminated`, field: 'metadata.namespace' }];
    throw e;
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

export function admitDelete(rt: ResourceType, name: string): void {
  if (rt.deletion?.protectedNames?.includes(name)) throw errors.forbidden(groupResourceOf(rt), name, 'this namespace may not be deleted');
}
