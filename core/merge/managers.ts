/**
 * Manager field sets: who owns which fields of one object, keyed by manager identity (the JSON
 * identifier upstream builds from manager, operation, apiVersion for updaters, and subresource).
 * This is the in-memory form of metadata.managedFields that apply and update work on.
 */
import { FieldSet } from './field-set.js';
import { goJsonString } from './go-format.js';

export interface VersionedSet {
  readonly set: FieldSet;
  readonly apiVersion: string;
  /** Owned through apply (true) or through an update (false). */
  readonly applied: boolean;
}

/** Manager identifier -> owned fields. Insertion order is irrelevant; encoding sorts. */
export type ManagerSets = Map<string, VersionedSet>;

export interface ManagerIdentity {
  manager: string;
  operation: 'Apply' | 'Update';
  /** Only part of an updater's identity; an applier keeps one entry whatever version it applies with. */
  apiVersion?: string;
  subresource?: string;
}

/** The identifier upstream uses as a manager's key: its entry's JSON without time and fields. */
export function managerKey(id: ManagerIdentity): string {
  const parts: string[] = [];
  const put = (k: string, v: string | undefined): void => void (v && parts.push(`"${k}":${goJsonString(v)}`));
  put('manager', id.manager);
  put('operation', id.operation);
  if (id.operation === 'Update') put('apiVersion', id.apiVersion);
  put('subresource', id.subresource);
  return `{${parts.join(',')}}`;
}

const parsed = new Map<string, ManagerIdentity>();

export function parseManagerKey(key: string): ManagerIdentity {
  let id = parsed.get(key);
  if (!id) {
    if (parsed.size > 10000) parsed.clear();
    parsed.set(key, (id = parseKey(key)));
  }
  return { ...id };
}

function parseKey(key: string): ManagerIdentity {
  try {
    const o = JSON.parse(key) as Partial<ManagerIdentity>;
    const id: ManagerIdentity = { manager: o.manager ?? '', operation: o.operation === 'Apply' ? 'Apply' : 'Update' };
    if (o.apiVersion) id.apiVersion = o.apiVersion;
    if (o.subresource) id.subresource = o.subresource;
    return id;
  } catch {
    return { manager: key, operation: 'Update' };
  }
}

export const withSet = (vs: VersionedSet, set: FieldSet): VersionedSet => ({ set, apiVersion: vs.apiVersion, applied: vs.applied });

export const emptySet = (): FieldSet => new FieldSet();
