/**
 * The served resource types, observable: built-in kinds are put here at start and custom resources
 * as their definitions become established; routing, discovery, OpenAPI, the watch cache, listers,
 * controllers and group aliases follow it as types appear, change and disappear while the server
 * runs. Lookups are plain map reads (the request path asks once per request); the derived views
 * (lists, known kinds, groups) are rebuilt only when the generation changes.
 */
import { resourceId } from './context.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';

export type TypeChangeKind = 'added' | 'changed' | 'removed';

export interface TypeChange {
  kind: TypeChangeKind;
  /** The type after the change (for `removed`: the type that went). */
  rt: ResourceType;
  /** The type before a `changed`. */
  old?: ResourceType;
}

export type TypeListener = (change: TypeChange) => void;

export class TypeRegistry {
  private readonly byId = new Map<string, ResourceType>();
  private readonly listeners = new Set<TypeListener>();
  /** Bumps on every change: views derived from the types are rebuilt when it moves. */
  generation = 0;
  private view: { generation: number; all: readonly ResourceType[]; kinds: ReadonlySet<string>; groups: ReadonlySet<string> } | undefined;

  constructor(initial: Iterable<ResourceType> = []) {
    for (const rt of initial) this.byId.set(resourceId(rt), rt);
  }

  /** The type served at `group/version/plural`. */
  get(id: string): ResourceType | undefined {
    return this.byId.get(id);
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  private derived(): NonNullable<TypeRegistry['view']> {
    if (this.view?.generation !== this.generation) {
      const all = [...this.byId.values()];
      this.view = {
        generation: this.generation,
        all,
        // the kinds of virtual subresources (TokenRequest) are known too, though not served on their own
        kinds: new Set(all.flatMap((t) => [t, ...Object.values(t.subresources ?? {}).flatMap((sub) => (sub.kind ? [sub.kind] : []))]).map((t) => `${apiVersionOf(t)}/${t.kind}`)),
        groups: new Set(all.map((t) => t.group)),
      };
    }
    return this.view;
  }

  /** Every served type, in the order they were added. */
  all(): readonly ResourceType[] {
    return this.derived().all;
  }

  /** `apiVersion/kind` of every served kind (for TypeMeta checks). */
  get knownKinds(): ReadonlySet<string> {
    return this.derived().kinds;
  }

  /** Every served group ('' for core). */
  groups(): ReadonlySet<string> {
    return this.derived().groups;
  }

  /** Adds a type, or replaces the one at its id; listeners hear `added` or `changed`. */
  put(rt: ResourceType): void {
    const id = resourceId(rt);
    const old = this.byId.get(id);
    this.byId.set(id, rt);
    this.generation++;
    this.emit(old ? { kind: 'changed', rt, old } : { kind: 'added', rt });
  }

  /** Removes the type at `id`, if served; listeners hear `removed`. */
  remove(id: string): void {
    const rt = this.byId.get(id);
    if (!rt) return;
    this.byId.delete(id);
    this.generation++;
    this.emit({ kind: 'removed', rt });
  }

  /** Calls `fn` after every change, in registration order; returns an unsubscribe. */
  subscribe(fn: TypeListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private emit(c: TypeChange): void {
    for (const fn of this.listeners) {
      try {
        fn(c);
      } catch (err) {
        console.error(`svc-apiserver: a follower of resource types failed on ${c.kind} ${resourceId(c.rt)}:`, err);
      }
    }
  }
}
