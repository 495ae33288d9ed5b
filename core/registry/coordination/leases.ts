/**
 * Lease (coordination.svc.io/v1, namespaced): a holder identity with acquire/renew times, used for
 * leader election and node heartbeats. The alpha fields strategy and preferredHolder
 * (CoordinatedLeaderElection, off by default in 1.32) are dropped on write unless the gate is on or the
 * stored object already has them, as upstream's strategy does. Validation is upstream's
 * ValidateLeaseSpec; PUT on a missing lease creates it.
 */
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { metadataAgeColumn, metadataNameColumn } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { isQualifiedName } from '../../api/validation.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';

/** Strategies the server knows; custom ones must be domain-prefixed qualified names. */
export const LEASE_STRATEGIES: readonly string[] = ['OldestEmulationVersion'];

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
  strategy?: string;
  preferredHolder?: string;
}

interface Lease extends ApiObject {
  spec?: LeaseSpec;
}

const COORDINATION = 'io.svc.api.coordination.v1';

export const leaseSchema = objectSchema(
  `${COORDINATION}.Lease`,
  {
    spec: s.struct(
      `${COORDINATION}.LeaseSpec`,
      {
        holderIdentity: s.string({ ptr: true, description: 'Identity of the current holder.' }),
        leaseDurationSeconds: s.int32({
          ptr: true,
          description: 'How long, counted from renewTime, other candidates wait before they may take the lease over. Greater than 0.',
        }),
        acquireTime: s.microTime({ ptr: true, description: 'When the current holder took the lease.' }),
        renewTime: s.microTime({ ptr: true, description: 'When the current holder last renewed the lease.' }),
        leaseTransitions: s.int32({ ptr: true, description: 'How many times the lease has changed holders. Not negative.' }),
        strategy: s.string({
          ptr: true,
          description: 'How a coordinator picks the holder in coordinated leader election (alpha, gate CoordinatedLeaderElection): OldestEmulationVersion, or a domain-prefixed name.',
        }),
        preferredHolder: s.string({ ptr: true, description: 'Holder the coordinator wants to hand the lease to (alpha; only with strategy).' }),
      },
      { description: 'The holder of the lease and its timing.', typeDescription: 'Specification of a lease.' },
    ),
  },
  [],
  'A lock held for a while and renewed by its holder, for leader election and heartbeats.',
);

function validateStrategy(strategy: string, path: string): FieldError[] {
  // upstream nests the path once more: spec.strategy.strategy.
  const p = `${path}.strategy`;
  if (!strategy.includes('/')) {
    return LEASE_STRATEGIES.includes(strategy) ? [] : [fieldErrors.notSupported(p, strategy, LEASE_STRATEGIES)];
  }
  return isQualifiedName(strategy).map((msg) => fieldErrors.invalid(p, strategy, msg));
}

export function validateLeaseSpec(spec: LeaseSpec, path = 'spec'): FieldError[] {
  const errs: FieldError[] = [];
  if (spec.leaseDurationSeconds != null && spec.leaseDurationSeconds <= 0) {
    errs.push(fieldErrors.invalid(`${path}.leaseDurationSeconds`, spec.leaseDurationSeconds, 'must be greater than 0'));
  }
  if (spec.leaseTransitions != null && spec.leaseTransitions < 0) {
    errs.push(fieldErrors.invalid(`${path}.leaseTransitions`, spec.leaseTransitions, 'must be greater than or equal to 0'));
  }
  if (spec.strategy != null) errs.push(...validateStrategy(spec.strategy, `${path}.strategy`));
  if (spec.preferredHolder && !spec.strategy) {
    errs.push(fieldErrors.forbidden(`${path}.preferredHolder`, 'may only be specified if `strategy` is defined'));
  }
  return errs;
}

export interface LeaseFeatureGates {
  /** CoordinatedLeaderElection (alpha in 1.32, default off). */
  coordinatedLeaderElection: boolean;
}

/** The Lease type under the given feature gates; `leases` is the default (gate off). */
export function makeLeases(gates: LeaseFeatureGates): ResourceType {
  const dropOnCreate = (obj: ApiObject): void => {
    if (gates.coordinatedLeaderElection) return;
    const spec = (obj as Lease).spec;
    if (!spec) return;
    delete spec.strategy;
    delete spec.preferredHolder;
  };
  const dropOnUpdate = (next: ApiObject, old: ApiObject): void => {
    if (gates.coordinatedLeaderElection) return;
    const spec = (next as Lease).spec;
    const prev = (old as Lease).spec;
    if (!spec) return;
    // Kept when already stored, so a downgrade does not wipe them.
    if (prev?.strategy == null) delete spec.strategy;
    if (prev?.preferredHolder == null) delete spec.preferredHolder;
  };
  return {
    group: 'coordination.svc.io',
    version: 'v1',
    kind: 'Lease',
    plural: 'leases',
    singular: 'lease',
    namespaced: true,
    protobufPackage: 'svc.io.api.coordination.v1',
    schema: leaseSchema,
    allowCreateOnUpdate: true,
    unconditionalUpdate: false,
    prepareForCreate: dropOnCreate,
    prepareForUpdate: dropOnUpdate,
    validateCreate: (obj) => validateLeaseSpec((obj as Lease).spec ?? {}),
    validateUpdate: (next) => validateLeaseSpec((next as Lease).spec ?? {}),
    tableColumns: [
      metadataNameColumn,
      { name: 'Holder', type: 'string', description: 'Identity of the current holder of the lease.', cell: (o) => (o as Lease).spec?.holderIdentity ?? '' },
      metadataAgeColumn,
    ],
  };
}

export const leases: ResourceType = makeLeases({ coordinatedLeaderElection: false });
