/**
 * Custom resource types where the type registry does not hold them: a pool worker sees only the kinds
 * built in, so a task on a custom resource names its definition and the revision its type was built
 * from; the worker builds the types from the definition as stored (the same pure builder the main
 * thread uses) and keeps them until a task names a newer revision.
 */
import { errors } from '../api/status.js';
import { parseStored } from '../codec/object-bytes.js';
import type { Store } from '../storage/interface.js';
import { resourceId } from '../registry/context.js';
import type { ResourceType } from '../registry/resource-type.js';
import { customResourceTypes } from './builder.js';
import type { CustomResourceDefinition } from './types.js';

export interface DefinitionRef {
  name: string;
  revision: number;
}

const definitionKey = (name: string): string => `/registry/apiextensions.svc.io/customresourcedefinitions/${name}`;

export class CustomTypeResolver {
  private readonly byDefinition = new Map<string, { revision: number; types: Map<string, ResourceType> }>();

  constructor(private readonly store: Store) {}

  /** The type served at `resource` by definition `def` at (at least) its revision; 404 when it is not served. */
  async resolve(def: DefinitionRef, resource: string): Promise<ResourceType> {
    let built = this.byDefinition.get(def.name);
    if (!built || built.revision < def.revision) {
      const kv = await this.store.get(definitionKey(def.name));
      if (!kv) {
        this.byDefinition.delete(def.name);
        throw errors.pathNotFound();
      }
      const crd = { kind: 'CustomResourceDefinition', apiVersion: 'apiextensions.svc.io/v1', ...parseStored(kv.value) } as CustomResourceDefinition;
      built = { revision: kv.modRevision, types: new Map(customResourceTypes(crd, kv.modRevision).map((t) => [resourceId(t), t])) };
      this.byDefinition.set(def.name, built);
    }
    const rt = built.types.get(resource);
    if (!rt) throw errors.pathNotFound();
    return rt;
  }
}
