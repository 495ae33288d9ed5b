/**
 * Builds the registry context (types, known kinds, clock, feature gates) the same way on the main
 * thread and in every worker.
 */
import { cborShapeOf, registerCborKind } from '../codec/cbor.js';
import { registerProtobufKind } from '../codec/protobuf/kinds.js';
import type { Store } from '../storage/interface.js';
import type { InlineAdmission, RegistryContext } from './context.js';
import { TypeRegistry } from './type-registry.js';
import { CustomTypeResolver } from '../apiextensions/resolver.js';
import { servedTypesFor } from './enablement.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';

export interface RegistrySettings {
  /** Effective feature gates (already resolved against defaults). */
  featureGates: Record<string, boolean>;
  runtimeConfig: Record<string, boolean>;
  /** The built-in admission steps on (both, unless --disable-admission-plugins names them). */
  inlineAdmission?: InlineAdmission;
}

export function buildRegistryContext(store: Store, s: RegistrySettings, types: readonly ResourceType[] = servedTypesFor(s.featureGates, s.runtimeConfig)): RegistryContext {
  // the kinds of virtual subresources (TokenRequest) are known too, though not served on their own
  const kinds = types.flatMap((t) => [t, ...Object.values(t.subresources ?? {}).flatMap((sub) => (sub.kind ? [sub.kind] : []))]);
  for (const t of kinds) {
    if (t.protobufPackage) registerProtobufKind(apiVersionOf(t), t.kind, t.protobufPackage, !t.virtual);
    registerCborKind(apiVersionOf(t), t.kind, cborShapeOf(t.schema));
  }
  return {
    store,
    types: new TypeRegistry(types),
    now: () => new Date(),
    featureGates: new Map(Object.entries(s.featureGates)),
    writeChecks: new Map(),
    bodyFormats: { cbor: s.featureGates.CBORServingAndStorage === true },
    customTypes: new CustomTypeResolver(store),
    inlineAdmission: s.inlineAdmission ?? { namespaceLifecycle: true, nodeRestriction: true },
  };
}
