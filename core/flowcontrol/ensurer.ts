/**
 * Keeps the bootstrap configuration (bootstrap.ts) in the store at every start, as upstream's
 * configuration ensurer: a missing object is created with `apf.svc.io/autoupdate-spec: "true"`; a
 * mandatory object always gets its spec back (and the annotation set true); a suggested object gets
 * it back only when its annotation says true, or, without a valid boolean there, when it was never
 * changed by anyone (generation 1) - otherwise the annotation is set false and the object left as the
 * user made it. Objects annotated true that the configuration no longer has are deleted.
 * Also the `Dangling` condition of every FlowSchema (upstream's config consumer writes it).
 */
import { StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { jsonEqual } from '../api/validation.js';
import type { ControllerIdentity, TypedClient } from '../registry/client.js';
import { type FlowControlCondition, type FlowSchema, normalizedSpec } from '../registry/flowcontrol/flowschemas.js';
import type { PriorityLevelConfiguration } from '../registry/flowcontrol/prioritylevelconfigurations.js';
import type { Lister } from '../registry/lister.js';
import type { ResourceType } from '../registry/resource-type.js';
import { AUTO_UPDATE_ANNOTATION, mandatoryFlowSchemas, mandatoryPriorityLevels, suggestedFlowSchemas, suggestedPriorityLevels } from './bootstrap.js';

export const producerIdentity: ControllerIdentity = {
  user: { username: 'system:apiserver', groups: ['system:masters', 'system:authenticated'] },
  userAgent: 'api-priority-and-fairness-config-producer-v1',
};

export const consumerIdentity: ControllerIdentity = {
  user: { username: 'system:apiserver', groups: ['system:masters', 'system:authenticated'] },
  userAgent: 'api-priority-and-fairness-config-consumer-v1',
};

/** Go's strconv.ParseBool: undefined when the text is not a boolean. */
export function parseGoBool(v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

export interface BootstrapObject {
  metadata: { name: string };
  spec: unknown;
}

export type EnsureOp = { op: 'none' } | { op: 'create' | 'update'; object: ApiObject };

/** Whether the server may rewrite a suggested object's spec (upstream's shouldUpdateSpec). */
function autoUpdateOf(current: ApiObject): boolean {
  const parsed = parseGoBool(current.metadata.annotations?.[AUTO_UPDATE_ANNOTATION]);
  if (parsed !== undefined) return parsed;
  // no valid annotation: an object nobody changed since it was made is the server's to keep
  return current.metadata.generation === 1;
}

/**
 * The spec the ensurer wants, with what an administrator may set left as set: the shares and lendable
 * percent of the exempt level (upstream's plSpecEqualish).
 */
function keptByAdministrator(current: ApiObject, want: BootstrapObject): unknown {
  const have = (current as { spec?: { type?: string; exempt?: { nominalConcurrencyShares?: number; lendablePercent?: number } } }).spec;
  const spec = want.spec as { type?: string; exempt?: object };
  if (current.kind === 'FlowSchema' || want.metadata.name !== 'exempt' || spec.type !== 'Exempt' || !have?.exempt) return want.spec;
  return { ...spec, exempt: { ...spec.exempt, nominalConcurrencyShares: have.exempt.nominalConcurrencyShares ?? 0, lendablePercent: have.exempt.lendablePercent ?? 0 } };
}

/** What the ensurer does with one bootstrap object given the stored one (pure). */
export function reviseBootstrapObject(current: ApiObject | undefined, want: BootstrapObject, mandatory: boolean): EnsureOp {
  if (!current) {
    return { op: 'create', object: { metadata: { name: want.metadata.name, annotations: { [AUTO_UPDATE_ANNOTATION]: 'true' } }, spec: structuredClone(want.spec) } as ApiObject };
  }
  const autoUpdate = mandatory || autoUpdateOf(current);
  const annotationOk = parseGoBool(current.metadata.annotations?.[AUTO_UPDATE_ANNOTATION]) === autoUpdate;
  const wantSpec = keptByAdministrator(current, want);
  const specChanged = autoUpdate && !jsonEqual(normalizedSpec((current as { spec?: unknown }).spec), normalizedSpec(wantSpec));
  if (annotationOk && !specChanged) return { op: 'none' };
  const next = structuredClone(current) as ApiObject & { spec?: unknown };
  delete next.metadata.managedFields;
  if (!annotationOk) next.metadata.annotations = { ...(next.metadata.annotations ?? {}), [AUTO_UPDATE_ANNOTATION]: String(autoUpdate) };
  if (specChanged) next.spec = structuredClone(wantSpec);
  return { op: 'update', object: next };
}

const ATTEMPTS = 5;

async function retried(attempt: () => Promise<void>): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (e) {
      // created, changed or deleted meanwhile (another server, a user): try again from the lister
      if (!(e instanceof StatusError) || ![404, 409].includes(e.code) || i >= ATTEMPTS) throw e;
      await new Promise((r) => setTimeout(r, 20 * i));
    }
  }
}

/** Brings the stored configuration to the bootstrap one (mandatory always, suggested per annotation). */
export async function ensureConfiguration(
  client: TypedClient,
  kinds: { flowSchemas: ResourceType; priorityLevels: ResourceType },
  listers: { flowSchemas: Lister<FlowSchema>; priorityLevels: Lister<PriorityLevelConfiguration> },
): Promise<void> {
  const one = async (rt: ResourceType, lister: Lister<ApiObject>, want: BootstrapObject, mandatory: boolean): Promise<void> =>
    retried(async () => {
      const have = lister.get('', want.metadata.name) as ApiObject | undefined;
      const r = reviseBootstrapObject(have && (structuredClone(have) as ApiObject), want, mandatory);
      if (r.op === 'create') await client.create(rt, r.object);
      else if (r.op === 'update') await client.update(rt, r.object);
    });
  const pls = listers.priorityLevels as unknown as Lister<ApiObject>;
  const fss = listers.flowSchemas as unknown as Lister<ApiObject>;
  await Promise.all([
    ...mandatoryPriorityLevels.map((w) => one(kinds.priorityLevels, pls, w, true)),
    ...suggestedPriorityLevels.map((w) => one(kinds.priorityLevels, pls, w, false)),
  ]);
  await Promise.all([...mandatoryFlowSchemas.map((w) => one(kinds.flowSchemas, fss, w, true)), ...suggestedFlowSchemas.map((w) => one(kinds.flowSchemas, fss, w, false))]);
  // what the configuration no longer has, where the server owns it
  const wanted = (xs: readonly BootstrapObject[]) => new Set(xs.map((x) => x.metadata.name));
  const wantedPLs = wanted([...mandatoryPriorityLevels, ...suggestedPriorityLevels]);
  const wantedFSs = wanted([...mandatoryFlowSchemas, ...suggestedFlowSchemas]);
  const unwanted = async (rt: ResourceType, lister: Lister<ApiObject>, keep: Set<string>): Promise<void> => {
    for (const o of lister.list()) {
      if (keep.has(o.metadata.name!) || parseGoBool(o.metadata.annotations?.[AUTO_UPDATE_ANNOTATION]) !== true) continue;
      await client.delete(rt, '', o.metadata.name!, {}, { preconditions: { resourceVersion: o.metadata.resourceVersion } }).catch((e: unknown) => {
        if (!(e instanceof StatusError) || ![404, 409].includes(e.code)) throw e;
      });
    }
  };
  await unwanted(kinds.flowSchemas, fss, wantedFSs);
  await unwanted(kinds.priorityLevels, pls, wantedPLs);
}

/** The `Dangling` condition a FlowSchema should carry (upstream's messages). */
export function danglingCondition(fs: Pick<FlowSchema, 'spec'>, levelExists: boolean): Required<Pick<FlowControlCondition, 'type' | 'status' | 'reason' | 'message'>> {
  const name = fs.spec?.priorityLevelConfiguration?.name ?? '';
  return levelExists
    ? { type: 'Dangling', status: 'False', reason: 'Found', message: `This FlowSchema references the PriorityLevelConfiguration object named ${JSON.stringify(name)} and it exists` }
    : { type: 'Dangling', status: 'True', reason: 'NotFound', message: `This FlowSchema references the PriorityLevelConfiguration object named ${JSON.stringify(name)} but there is no such object` };
}

/** Writes the Dangling condition of each FlowSchema whose condition is not what it should be; how many it wrote. */
export async function updateDanglingConditions(
  client: TypedClient,
  rt: ResourceType,
  listers: { flowSchemas: Lister<FlowSchema>; priorityLevels: Lister<PriorityLevelConfiguration> },
): Promise<number> {
  const levels = new Set(listers.priorityLevels.list().map((p) => p.metadata.name!));
  // side by side: concurrent writes share one commit
  const writes: Promise<unknown>[] = [];
  for (const fs of listers.flowSchemas.list()) {
    const want = danglingCondition(fs as FlowSchema, levels.has(fs.spec?.priorityLevelConfiguration?.name ?? ''));
    const conditions = (fs.status?.conditions ?? []) as FlowControlCondition[];
    const have = conditions.find((c) => c.type === 'Dangling');
    if (have && have.status === want.status && have.reason === want.reason && have.message === want.message) continue;
    const next = structuredClone(fs) as FlowSchema;
    delete next.metadata.managedFields;
    next.status = { conditions: [...conditions.filter((c) => c.type !== 'Dangling'), { ...want, lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] };
    writes.push(
      client.update(rt, next, { subresource: 'status' }).catch((e: unknown) => {
        // changed meanwhile: the change brings another pass
        if (!(e instanceof StatusError) || ![404, 409].includes(e.code)) throw e;
      }),
    );
  }
  await Promise.all(writes);
  return writes.length;
}
