/**
 * PriorityLevelConfiguration (flowcontrol.apiserver.svc.io/v1, cluster-scoped): a priority level of
 * API Priority and Fairness. Exempt levels run their requests at once; Limited ones get a share of the
 * server's concurrency (nominalConcurrencyShares, with lendablePercent lent to and
 * borrowingLimitPercent borrowed from others) and queue (shuffle-sharded fair queues) or reject what
 * exceeds it. Validation and defaulting are upstream's v1 (an explicit nominalConcurrencyShares of 0
 * stays 0; only an absent one becomes 30).
 */
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { metadataAgeColumn, metadataNameColumn } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType, SubresourceType } from '../resource-type.js';
import { jsonEqual } from '../../api/validation.js';
import { mandatoryPriorityLevels } from '../../flowcontrol/bootstrap.js';
import { conditionsStatusSchema, FLOWCONTROL_GROUP, type FlowControlCondition, normalizedSpec, validateConditions as conditionErrors } from './flowschemas.js';

const FC = 'io.svc.api.flowcontrol.v1';

export interface QueuingConfiguration {
  queues?: number;
  handSize?: number;
  queueLengthLimit?: number;
}

export interface LimitedPriorityLevelConfiguration {
  nominalConcurrencyShares?: number;
  limitResponse?: { type: string; queuing?: QueuingConfiguration };
  lendablePercent?: number;
  borrowingLimitPercent?: number;
}

export interface PriorityLevelConfigurationSpec {
  type: string;
  limited?: LimitedPriorityLevelConfiguration;
  exempt?: { nominalConcurrencyShares?: number; lendablePercent?: number };
}

export interface PriorityLevelConfiguration extends ApiObject {
  spec: PriorityLevelConfigurationSpec;
  status?: { conditions?: FlowControlCondition[] };
}

/** upstream's v1 defaults and limits. */
export const DEFAULT_NOMINAL_CONCURRENCY_SHARES = 30;
export const DEFAULT_QUEUES = 64;
export const DEFAULT_HAND_SIZE = 8;
export const DEFAULT_QUEUE_LENGTH_LIMIT = 50;
export const MAX_QUEUES = 512;
/** Bits of a flow's hash the shuffle-sharding dealer may use (upstream's MaxHashBits). */
export const MAX_HASH_BITS = 60;
export const ENABLEMENT_TYPES = ['Exempt', 'Limited'] as const;
export const LIMIT_RESPONSE_TYPES = ['Queue', 'Reject'] as const;

/** Bits of hash needed to deal a hand of handSize from deckSize cards (upstream's RequiredEntropyBits). */
export const requiredEntropyBits = (deckSize: number, handSize: number): number => Math.ceil(Math.log2(deckSize) * handSize);

export const priorityLevelConfigurationSchema = objectSchema(
  `${FC}.PriorityLevelConfiguration`,
  {
    spec: s.struct(
      `${FC}.PriorityLevelConfigurationSpec`,
      {
        type: s.string({ always: true, description: 'Exempt (never limited) or Limited.' }),
        limited: s.struct(
          `${FC}.LimitedPriorityLevelConfiguration`,
          {
            nominalConcurrencyShares: s.int32({ ptr: true, description: "This level's share of the server's concurrency (default 30; 0 allowed: the level runs only on borrowed seats)." }),
            limitResponse: s.struct(
              `${FC}.LimitResponse`,
              {
                type: s.string({ always: true, description: 'Queue or Reject: what happens to a request that cannot run at once.' }),
                queuing: s.struct(
                  `${FC}.QueuingConfiguration`,
                  {
                    queues: s.int32({ description: 'Number of queues (default 64, at most 512).' }),
                    handSize: s.int32({ description: 'Queues a flow is shuffle-sharded onto (default 8).' }),
                    queueLengthLimit: s.int32({ description: 'Requests a queue may hold (default 50).' }),
                  },
                  { ptr: true, description: 'How requests queue (type Queue only).', typeDescription: 'The queuing of a priority level.' },
                ),
              },
              { required: ['type'], description: 'What to do with requests that cannot run at once.', typeDescription: 'How a level answers requests beyond its limit.' },
            ),
            lendablePercent: s.int32({ ptr: true, description: 'Percent of the nominal limit other levels may borrow (0 to 100, default 0).' }),
            borrowingLimitPercent: s.int32({ ptr: true, description: 'Percent of the nominal limit this level may borrow from others; absent: no limit.' }),
          },
          { ptr: true, description: 'The limits of a Limited level.', typeDescription: 'A level whose requests are limited.' },
        ),
        exempt: s.struct(
          `${FC}.ExemptPriorityLevelConfiguration`,
          {
            nominalConcurrencyShares: s.int32({ ptr: true, description: "This level's share of the server's concurrency (default 0)." }),
            lendablePercent: s.int32({ ptr: true, description: 'Percent of the nominal limit other levels may borrow (default 0).' }),
          },
          { ptr: true, description: 'The shares of an Exempt level.', typeDescription: 'A level whose requests are never limited.' },
        ),
      },
      { required: ['type'], description: 'How the level limits its requests.', typeDescription: 'The specification of a priority level.' },
    ),
    status: conditionsStatusSchema('PriorityLevelConfiguration', { conditions: 'The current state of the priority level.', status: 'The current state of the priority level.', type: 'The state of a priority level.' }),
  },
  [],
  'A priority level of API Priority and Fairness: its share of concurrency and its queuing.',
);

/** upstream's v1 defaulting (SetDefaults_*): only absent values are filled. */
function defaults(obj: ApiObject): void {
  const spec = (obj as PriorityLevelConfiguration).spec;
  if (!spec) return;
  const ex = spec.exempt;
  if (ex) {
    ex.nominalConcurrencyShares ??= 0;
    ex.lendablePercent ??= 0;
  }
  const lim = spec.limited;
  if (lim) {
    lim.nominalConcurrencyShares ??= DEFAULT_NOMINAL_CONCURRENCY_SHARES;
    lim.lendablePercent ??= 0;
    const q = lim.limitResponse?.queuing;
    if (q) {
      if (!q.queues) q.queues = DEFAULT_QUEUES;
      if (!q.handSize) q.handSize = DEFAULT_HAND_SIZE;
      if (!q.queueLengthLimit) q.queueLengthLimit = DEFAULT_QUEUE_LENGTH_LIMIT;
    }
  }
}

function validateQueuing(q: QueuingConfiguration, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const queues = q.queues ?? 0;
  const hand = q.handSize ?? 0;
  const qll = q.queueLengthLimit ?? 0;
  if (qll <= 0) errs.push(fieldErrors.invalid(`${path}.queueLengthLimit`, qll, 'must be positive'));
  if (queues <= 0) errs.push(fieldErrors.invalid(`${path}.queues`, queues, 'must be positive'));
  else if (queues > MAX_QUEUES) errs.push(fieldErrors.invalid(`${path}.queues`, queues, `must not be greater than ${MAX_QUEUES}`));
  if (hand <= 0) errs.push(fieldErrors.invalid(`${path}.handSize`, hand, 'must be positive'));
  else if (hand > queues) errs.push(fieldErrors.invalid(`${path}.handSize`, hand, `should not be greater than queues (${queues})`));
  else if (requiredEntropyBits(queues, hand) > MAX_HASH_BITS) {
    errs.push(fieldErrors.invalid(`${path}.handSize`, hand, `required entropy bits of deckSize ${queues} and handSize ${hand} should not be greater than ${MAX_HASH_BITS}`));
  }
  return errs;
}

const percentError = (v: number | undefined, path: string): FieldError[] =>
  v != null && !(v >= 0 && v <= 100) ? [fieldErrors.invalid(path, v, 'must be between 0 and 100, inclusive')] : [];

function validateLimited(lim: LimitedPriorityLevelConfiguration, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const ncs = lim.nominalConcurrencyShares ?? 0;
  // v1 allows 0 (the level then runs only on what it borrows)
  if (ncs < 0) errs.push(fieldErrors.invalid(`${path}.nominalConcurrencyShares`, ncs, 'must be a non-negative integer'));
  const lr = lim.limitResponse ?? { type: '' };
  const lrPath = `${path}.limitResponse`;
  switch (lr.type) {
    case 'Reject':
      if (lr.queuing) errs.push(fieldErrors.forbidden(`${lrPath}.queuing`, 'must be nil if limited.limitResponse.type is not Limited'));
      break;
    case 'Queue':
      if (!lr.queuing) errs.push(fieldErrors.required(`${lrPath}.queuing`, 'must not be empty if limited.limitResponse.type is Limited'));
      else errs.push(...validateQueuing(lr.queuing, `${lrPath}.queuing`));
      break;
    default:
      errs.push(fieldErrors.notSupported(`${lrPath}.type`, lr.type, LIMIT_RESPONSE_TYPES));
  }
  errs.push(...percentError(lim.lendablePercent, `${path}.lendablePercent`));
  if (lim.borrowingLimitPercent != null && lim.borrowingLimitPercent < 0) {
    errs.push(fieldErrors.invalid(`${path}.borrowingLimitPercent`, lim.borrowingLimitPercent, 'if specified, must be a non-negative integer'));
  }
  return errs;
}

/**
 * upstream's ValidateIfMandatoryPriorityLevelConfigurationObject: the mandatory levels keep their
 * fixed spec, except the `exempt` field of the exempt level, which an administrator may change.
 */
function validateIfMandatory(spec: PriorityLevelConfigurationSpec, name: string, path: string): FieldError[] {
  const fixed = mandatoryPriorityLevels.find((m) => m.metadata.name === name)?.spec;
  if (!fixed) return [];
  if (name === 'exempt') {
    const have = { ...spec, exempt: fixed.exempt };
    return jsonEqual(normalizedSpec(have), normalizedSpec(fixed)) ? [] : [fieldErrors.invalid(path, spec, `spec of '${name}' except the 'spec.exempt' field must equal the fixed value`)];
  }
  return jsonEqual(normalizedSpec(spec), normalizedSpec(fixed)) ? [] : [fieldErrors.invalid(path, spec, `spec of '${name}' must equal the fixed value`)];
}

/** upstream's ValidatePriorityLevelConfigurationSpec (with the name rule for `exempt`). */
export function validatePriorityLevelSpec(spec: PriorityLevelConfigurationSpec, name: string, path = 'spec'): FieldError[] {
  const errs: FieldError[] = [];
  if ((name === 'exempt') !== (spec.type === 'Exempt')) errs.push(fieldErrors.invalid(`${path}.type`, spec.type, "must be 'Exempt' if and only if `name` is 'exempt'"));
  switch (spec.type) {
    case 'Exempt':
      if (spec.limited) errs.push(fieldErrors.forbidden(`${path}.limited`, 'must be nil if the type is not Limited'));
      if (spec.exempt) {
        const ncs = spec.exempt.nominalConcurrencyShares;
        if (ncs != null && ncs < 0) errs.push(fieldErrors.invalid(`${path}.exempt.nominalConcurrencyShares`, ncs, 'must be a non-negative integer'));
        errs.push(...percentError(spec.exempt.lendablePercent, `${path}.exempt.lendablePercent`));
      }
      break;
    case 'Limited':
      if (spec.exempt) errs.push(fieldErrors.forbidden(`${path}.exempt`, 'must be nil if the type is Limited'));
      if (!spec.limited) errs.push(fieldErrors.required(`${path}.limited`, 'must not be empty when type is Limited'));
      else errs.push(...validateLimited(spec.limited, `${path}.limited`));
      break;
    default:
      errs.push(fieldErrors.notSupported(`${path}.type`, spec.type, ENABLEMENT_TYPES));
  }
  errs.push(...validateIfMandatory(spec, name, path));
  return errs;
}

const validateConditions = (conditions: readonly FlowControlCondition[] | undefined): FieldError[] => conditionErrors(conditions, 'status.conditions');

function validate(obj: ApiObject): FieldError[] {
  const pl = obj as PriorityLevelConfiguration;
  return [...validatePriorityLevelSpec(pl.spec ?? ({ type: '' } as PriorityLevelConfigurationSpec), pl.metadata?.name ?? ''), ...validateConditions(pl.status?.conditions)];
}

const statusSubresource: SubresourceType = {
  verbs: ['get', 'patch', 'update'],
  prepareForUpdate(next, old) {
    (next as PriorityLevelConfiguration).spec = (old as PriorityLevelConfiguration).spec;
  },
  validateUpdate: (next) => validateConditions((next as PriorityLevelConfiguration).status?.conditions),
};

const NONE = '<none>';
const queuingOf = (o: ApiObject): QueuingConfiguration | undefined => (o as PriorityLevelConfiguration).spec?.limited?.limitResponse?.queuing;

export const priorityLevelConfigurations: ResourceType = {
  group: FLOWCONTROL_GROUP,
  version: 'v1',
  kind: 'PriorityLevelConfiguration',
  plural: 'prioritylevelconfigurations',
  singular: 'prioritylevelconfiguration',
  namespaced: false,
  protobufPackage: 'svc.io.api.flowcontrol.v1',
  schema: priorityLevelConfigurationSchema,
  defaults,
  prepareForCreate(obj) {
    delete (obj as PriorityLevelConfiguration).status;
  },
  prepareForUpdate(next, old) {
    const prev = (old as PriorityLevelConfiguration).status;
    if (prev) (next as PriorityLevelConfiguration).status = structuredClone(prev);
    else delete (next as PriorityLevelConfiguration).status;
  },
  validateCreate: validate,
  validateUpdate: validate,
  generationOf: (obj) => (obj as PriorityLevelConfiguration).spec,
  tableColumns: [
    metadataNameColumn,
    { name: 'Type', type: 'string', description: '`type` indicates whether this priority level is subject to limitation on request execution.', cell: (o) => (o as PriorityLevelConfiguration).spec?.type ?? '' },
    {
      name: 'NominalConcurrencyShares',
      type: 'string',
      description: '`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level.',
      cell: (o) => (o as PriorityLevelConfiguration).spec?.limited?.nominalConcurrencyShares ?? NONE,
    },
    { name: 'Queues', type: 'string', description: '`queues` is the number of queues for this priority level.', cell: (o) => queuingOf(o)?.queues ?? NONE },
    { name: 'HandSize', type: 'string', description: '`handSize` is a small positive number that configures the shuffle sharding of requests into queues.', cell: (o) => queuingOf(o)?.handSize ?? NONE },
    { name: 'QueueLengthLimit', type: 'string', description: '`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time.', cell: (o) => queuingOf(o)?.queueLengthLimit ?? NONE },
    metadataAgeColumn,
  ],
  subresources: { status: statusSubresource },
  resetFields: { '': ['status'], status: ['spec'] },
};
