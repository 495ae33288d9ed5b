/**
 * Which kinds are served, and how: feature gates (upstream's names, stages and defaults, for the
 * gates whose behaviour this server has) and --runtime-config (a group version or one resource turned
 * off). Resolved once from the flags and applied the same way on the main thread and in every worker.
 */
import { makeLeases } from './coordination/leases.js';
import { alphaResourceTypes, builtinResourceTypes } from './catalog.js';
import { canonicalSpelling, respellApiVersion } from '../api/group-aliases.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';

export class EnablementError extends Error {}

interface GateSpec {
  stage: 'ALPHA' | 'BETA' | 'GA' | 'DEPRECATED';
  default: boolean;
  /** GA gates are locked to their default: setting the other value is an error. */
  locked?: boolean;
}

/** The gates this server knows, as upstream v1.32 defines them. */
export const knownFeatureGates: Readonly<Record<string, GateSpec>> = {
  AllowUnsafeMalformedObjectDeletion: { stage: 'ALPHA', default: false },
  APIResponseCompression: { stage: 'BETA', default: true },
  APIServerIdentity: { stage: 'BETA', default: true },
  AuthorizeNodeWithSelectors: { stage: 'BETA', default: true },
  AuthorizeWithSelectors: { stage: 'BETA', default: true },
  CBORServingAndStorage: { stage: 'ALPHA', default: false },
  ClusterTrustBundle: { stage: 'ALPHA', default: false },
  CoordinatedLeaderElection: { stage: 'ALPHA', default: false },
  MutatingAdmissionPolicy: { stage: 'ALPHA', default: false },
  RemoteRequestHeaderUID: { stage: 'ALPHA', default: false },
  StructuredAuthenticationConfiguration: { stage: 'BETA', default: true },
  WatchList: { stage: 'BETA', default: true },
  ServerSideApply: { stage: 'GA', default: true, locked: true },
  ServerSideFieldValidation: { stage: 'GA', default: true, locked: true },
};

/** What setting these gates warns at start (spec rule 10): GA gates are non-operational, deprecated ones go away. */
export function featureGateWarnings(requested: Readonly<Record<string, boolean>>): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(requested)) {
    const stage = knownFeatureGates[name]?.stage;
    if (stage === 'GA') out.push(`Setting GA feature gate ${name}=${value}. It will be removed in a future release.`);
    else if (stage === 'DEPRECATED') out.push(`Setting deprecated feature gate ${name}=${value}. It will be removed in a future release.`);
  }
  return out;
}

/** The effective gates: defaults overridden by --feature-gates; unknown or locked gates are errors. */
export function resolveFeatureGates(requested: Readonly<Record<string, boolean>>): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const [name, spec] of Object.entries(knownFeatureGates)) out[name] = spec.default;
  for (const [name, value] of Object.entries(requested)) {
    const spec = knownFeatureGates[name];
    if (!spec) throw new EnablementError(`unrecognized feature gate: ${name}`);
    if (spec.locked && value !== spec.default) throw new EnablementError(`cannot set feature gate ${name} to ${value}, feature is locked to ${spec.default}`);
    out[name] = value;
  }
  return out;
}

const gvOf = (rt: ResourceType): string => apiVersionOf(rt);

/** Group version of a runtime-config key: `v1`, `api/v1` and `<group>/<version>` name one; `.../<resource>` names a resource. */
function parseRuntimeKey(key: string, servedGVs: ReadonlySet<string>): { gv: string; resource?: string } | undefined {
  // upstream's spelling of a group (`admissionregistration.k8s.io/v1alpha1`) names ours
  const k = respellApiVersion(key.startsWith('api/v1') ? key.slice(4) : key, canonicalSpelling);
  if (servedGVs.has(k)) return { gv: k };
  const slash = k.lastIndexOf('/');
  if (slash > 0 && servedGVs.has(k.slice(0, slash))) return { gv: k.slice(0, slash), resource: k.slice(slash + 1) };
  return undefined;
}

/**
 * Why a runtime-config key names nothing served, in upstream's words: a group this server does not
 * have is `unknown api groups <group>` (its flag validation); a version this server does not serve
 * of a group it has (a removed one, such as flowcontrol's v1beta3) is `group version <group>/<version>
 * that has not been registered` (its resource config merge).
 */
function unknownKeyError(key: string, servedGVs: ReadonlySet<string>): string {
  const [group = '', version] = key.split('/');
  const known = [...servedGVs].some((gv) => respellApiVersion(`${group}/x`, canonicalSpelling) === `${gv.split('/')[0]}/x`);
  return known && version ? `group version ${group}/${version} that has not been registered` : `unknown api groups ${group}`;
}

/**
 * Applies --runtime-config: `api/all`, `api/ga`, `api/alpha`, a group version, or one resource; the
 * most specific key wins. `alpha` are the kinds of alpha versions (their gates on): served only when
 * the runtime config turns them on (their version or resource, api/alpha or api/all), as upstream
 * serves no alpha version by default.
 */
export function applyRuntimeConfig(types: readonly ResourceType[], config: Readonly<Record<string, boolean>>, alpha: readonly ResourceType[] = [], knownAlpha: readonly ResourceType[] = alpha): ResourceType[] {
  // an alpha version is known (a key naming it is no error) even while its gate is off
  const servedGVs = new Set([...types, ...knownAlpha].map(gvOf));
  const byGV = new Map<string, boolean>();
  const byResource = new Map<string, boolean>();
  let all: boolean | undefined;
  let alphaAll: boolean | undefined;
  let gaAll: boolean | undefined;
  for (const [key, value] of Object.entries(config)) {
    if (key === 'api/all') all = value;
    else if (key === 'api/ga') gaAll = value; // every version served by default is GA
    else if (key === 'api/alpha') alphaAll = value;
    else if (key === 'api/beta') continue; // nothing served at that stage
    else {
      const parsed = parseRuntimeKey(key, servedGVs);
      if (!parsed) throw new EnablementError(unknownKeyError(key, servedGVs));
      if (!parsed.resource) byGV.set(parsed.gv, value);
      else if ([...types, ...knownAlpha].some((t) => gvOf(t) === parsed.gv && t.plural === parsed.resource)) byResource.set(`${parsed.gv}/${parsed.resource}`, value);
      else throw new EnablementError(`unknown resource ${key}`);
    }
  }
  const enabled = (rt: ResourceType): boolean => byResource.get(`${gvOf(rt)}/${rt.plural}`) ?? byGV.get(gvOf(rt)) ?? gaAll ?? all ?? true;
  const alphaEnabled = (rt: ResourceType): boolean => byResource.get(`${gvOf(rt)}/${rt.plural}`) ?? byGV.get(gvOf(rt)) ?? alphaAll ?? all ?? false;
  const out = [...types.filter(enabled), ...alpha.filter(alphaEnabled)];
  if (!out.some((t) => t.group === '' && t.plural === 'namespaces')) throw new EnablementError('the core v1 API (namespaces) cannot be disabled');
  return out;
}

/** The served resource types under these gates and runtime config. */
export function servedTypesFor(gates: Readonly<Record<string, boolean>>, runtimeConfig: Readonly<Record<string, boolean>> = {}): ResourceType[] {
  const types = builtinResourceTypes.map((t) => (t.group === 'coordination.svc.io' && t.plural === 'leases' ? makeLeases({ coordinatedLeaderElection: gates.CoordinatedLeaderElection === true }) : t));
  const alpha = alphaResourceTypes.filter((a) => gates[a.gate] === true).map((a) => a.rt);
  return applyRuntimeConfig(types, runtimeConfig, alpha, alphaResourceTypes.map((a) => a.rt));
}
