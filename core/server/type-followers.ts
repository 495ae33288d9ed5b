/**
 * What follows the type registry on the main thread: the watch cache (a cache per stored type, added
 * and dropped as types come and go, its selection attributes read from the type as it is now), and
 * views derived from the types (discovery, OpenAPI), rebuilt when the registry's generation moves.
 */
import { describeStoredLazily, describeUnreadable } from '../registry/describe.js';
import { resourcePrefix } from '../registry/keys.js';
import type { ResourceType } from '../registry/resource-type.js';
import type { TypeRegistry } from '../registry/type-registry.js';
import type { Cacher } from '../storage/cacher.js';
import { resourceId } from '../registry/context.js';

export interface CacheSizes {
  capacity: number;
  maxBytes: number;
}

function cacheOptions(types: TypeRegistry, rt: ResourceType, sizes: CacheSizes) {
  const id = resourceId(rt);
  return {
    prefix: resourcePrefix(rt),
    ...sizes,
    // the type as it is now: a changed definition changes its selectable fields
    describe: (key: string, stored: Uint8Array, rev: number) => {
      const now = types.get(id) ?? rt;
      // bytes that are not an object (written by something else, or damaged) are found on first use
      return describeStoredLazily(now, key, stored, rev);
    },
    describeUnreadable: (key: string, stored: Uint8Array, rev: number, reason: string) => describeUnreadable(types.get(id) ?? rt, key, stored, rev, new Error(reason)),
  };
}

/** Registers a cache for every stored type now, and keeps the set in step with the registry. */
export function followTypesInCache(types: TypeRegistry, cacher: Cacher, sizes: CacheSizes): void {
  for (const rt of types.all()) if (!rt.virtual) cacher.register(cacheOptions(types, rt, sizes));
  types.subscribe((c) => {
    if (c.rt.virtual) return;
    const prefix = resourcePrefix(c.rt);
    if (c.kind === 'removed') {
      // another version of the same resource may still be served from the same keys
      if (!types.all().some((t) => !t.virtual && resourcePrefix(t) === prefix)) cacher.remove(prefix);
    } else if (!cacher.has(prefix)) {
      cacher.add(cacheOptions(types, c.rt, sizes)).catch((err: Error) => console.error(`svc-apiserver: watch cache for ${prefix} failed to load:`, err));
    }
  });
}

/** A view of the types, built once per registry generation. */
export function byGeneration<T>(types: TypeRegistry, build: (all: readonly ResourceType[]) => T): () => T {
  let generation = -1;
  let value: T;
  return () => {
    if (generation !== types.generation) {
      value = build(types.all());
      generation = types.generation;
    }
    return value;
  };
}
