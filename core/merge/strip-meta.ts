/**
 * Fields the API server never records as owned: type meta and the server-set parts of metadata.
 * Removed from the acting manager's set after each write, member by member (ownership of fields
 * below metadata, such as labels, is kept). A manager left with nothing is dropped.
 */
import { FieldSet } from './field-set.js';
import { type ManagerSets, withSet } from './managers.js';
import { fieldPE } from './path-element.js';

const serverSetMetadata = ['name', 'namespace', 'creationTimestamp', 'selfLink', 'uid', 'clusterName', 'generation', 'managedFields', 'resourceVersion'];
/** The metadata fields no manager owns. */
export const SERVER_SET_METADATA: ReadonlySet<string> = new Set(serverSetMetadata);

export const strippedFields: FieldSet = FieldSet.of(
  [fieldPE('apiVersion')],
  [fieldPE('kind')],
  [fieldPE('metadata')],
  ...serverSetMetadata.map((f) => [fieldPE('metadata'), fieldPE(f)]),
);

export function stripMeta(managers: ManagerSets, manager: string): ManagerSets {
  const vs = managers.get(manager);
  if (!vs) return managers;
  const set = vs.set.difference(strippedFields);
  if (set === vs.set) return managers;
  const out = new Map(managers);
  if (set.isEmpty()) out.delete(manager);
  else out.set(manager, withSet(vs, set));
  return out;
}
