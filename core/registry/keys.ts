/**
 * Storage keys: /registry/<group or "core">/<plural>/[<namespace>/]<name>. Key order is list order
 * (namespace, then name), and every resource's keys share one prefix, which is how the Cacher routes
 * events to a resource's WatchCache.
 */
import type { ResourceType } from './resource-type.js';

export const resourcePrefix = (rt: Pick<ResourceType, 'group' | 'plural'>): string => `/registry/${rt.group || 'core'}/${rt.plural}/`;

/** Prefix of one namespace's objects, or of all objects when `namespace` is empty. */
export const collectionPrefix = (rt: ResourceType, namespace: string): string =>
  rt.namespaced && namespace ? `${resourcePrefix(rt)}${namespace}/` : resourcePrefix(rt);

export const objectKey = (rt: ResourceType, namespace: string, name: string): string =>
  rt.namespaced ? `${resourcePrefix(rt)}${namespace}/${name}` : `${resourcePrefix(rt)}${name}`;

/** Namespace and name encoded in a key of `rt`. */
export function keyParts(rt: ResourceType, key: string): { namespace: string; name: string } {
  const rest = key.slice(resourcePrefix(rt).length);
  if (!rt.namespaced) return { namespace: '', name: rest };
  const slash = rest.indexOf('/');
  return { namespace: rest.slice(0, slash), name: rest.slice(slash + 1) };
}
