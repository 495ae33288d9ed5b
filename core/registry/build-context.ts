/**
 * Builds the registry context (types, known kinds, clock, continue-token key, feature gates) the same
 * way on the main thread and in every worker.
 */
import { registerProtobufKind } from '../codec/protobuf/kinds.js';
import type { Store } from '../storage/interface.js';
import { type RegistryContext, resourceId } from './context.js';
import { servedTypesFor } from './enablement.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';

export interface RegistrySettings {
  continueKeyHex: string;
  /** Effective feature gates (already resolved against defaults). */
  featureGates: Record<string, boolean>;
  runtimeConfig: Record<string, boolean>;
}

export function buildRegistryContext(store: Store, s: RegistrySettings, types: readonly ResourceType[] = servedTypesFor(s.featureGates, s.runtimeConfig)): RegistryContext {
  for (const t of types) if (t.protobufPackage) registerProtobufKind(apiVersionOf(t), t.kind, t.protobufPackage, !t.virtual);
  return {
    store,
    types: new Map(types.map((t) => [resourceId(t), t])),
    knownKinds: new Set(types.map((t) => `${apiVersionOf(t)}/${t.kind}`)),
    now: () => new Date(),
    continueKey: Buffer.from(s.continueKeyHex, 'hex'),
    featureGates: new Map(Object.entries(s.featureGates)),
    writeChecks: new Map(),
  };
}
