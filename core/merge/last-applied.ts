/**
 * Moving an object from client-side to server-side apply, as upstream's field manager does for the
 * manager named `kubectl` (what `kubectl apply --server-side` sends):
 *
 * - taking over: when such an apply conflicts, the conflicts on fields that the
 *   `kubectl.kubernetes.io/last-applied-configuration` annotation (client-side apply's record) set
 *   and that still hold the values it set are no conflicts: the apply is forced for them. Any other
 *   conflict still fails the apply, and only those are reported. An annotation that is not JSON, has
 *   no kind, names another apiVersion or does not fit the schema is ignored (the conflicts stand).
 * - keeping it current: after a successful apply, an object that carries the annotation gets it
 *   rewritten from the applied configuration (without the annotation itself), as Go's encoder writes
 *   it; when that would push the annotations past their size limit, the annotation is dropped.
 */
import { TOTAL_ANNOTATION_SIZE_LIMIT, byteLength } from '../api/validation.js';
import type { ApiObject } from '../api/types.js';
import type { Schema } from '../schema/schema.js';
import type { OwnershipConflict } from './apply.js';
import type { FieldSet } from './field-set.js';
import { goJson } from './go-format.js';
import { type JsonObject, cloneJson, isObject } from './json-values.js';
import { compareValues, toFieldSet, validateValue } from './typed.js';

export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';
/** The only manager whose applies take over from, and keep up, the client-side record. */
export const LAST_APPLIED_MANAGER = 'kubectl';

const lastAppliedText = (obj: ApiObject | null): string => obj?.metadata?.annotations?.[LAST_APPLIED_ANNOTATION] ?? '';

/**
 * The fields the live object's last-applied annotation set that still hold the values it set, or
 * undefined when the annotation is absent or unusable.
 */
export function fieldsStillAsLastApplied(live: ApiObject, schema: Schema, apiVersion: string): FieldSet | undefined {
  const text = lastAppliedText(live);
  if (!text) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  // what Go's unstructured decoding accepts: an object with a kind, here of the endpoint's version
  if (!isObject(parsed as JsonObject) || typeof (parsed as JsonObject).kind !== 'string' || !(parsed as JsonObject).kind) return undefined;
  const lastApplied = parsed as JsonObject;
  if (lastApplied.apiVersion !== apiVersion) return undefined;
  if (validateValue(lastApplied, schema, false).length) return undefined;
  const liveValue = live as unknown as JsonObject;
  if (validateValue(liveValue, schema, false).length) return undefined;
  const c = compareValues(lastApplied, liveValue, schema);
  return toFieldSet(lastApplied, schema).difference(c.modified).difference(c.added).difference(c.removed);
}

/** The conflicts the last-applied fields do not cover (all of them when there is no usable annotation). */
export function conflictsBeyondLastApplied(conflicts: readonly OwnershipConflict[], allowed: FieldSet | undefined): readonly OwnershipConflict[] {
  if (!allowed) return conflicts;
  return conflicts.filter((c) => !allowed.has(c.path));
}

/**
 * Rewrites the annotation of `result` (when it carries one) from the applied configuration; the
 * annotation is dropped instead when the annotations would exceed their size limit.
 */
export function refreshLastApplied(result: ApiObject, applied: ApiObject): void {
  if (!lastAppliedText(result)) return;
  const annotations = result.metadata.annotations!;
  annotations[LAST_APPLIED_ANNOTATION] = encodeLastApplied(applied);
  let total = 0;
  for (const [k, v] of Object.entries(annotations)) total += byteLength(k) + byteLength(v);
  if (total > TOTAL_ANNOTATION_SIZE_LIMIT) delete annotations[LAST_APPLIED_ANNOTATION];
}

/**
 * The applied configuration without the annotation, encoded as upstream's unstructured encoder does
 * (encoding/json: keys sorted, HTML escaped, a trailing newline). An annotations map left empty stays
 * as an empty map; an absent one stays absent.
 */
export function encodeLastApplied(applied: ApiObject): string {
  const copy = cloneJson(applied as unknown as JsonObject);
  const meta = copy.metadata;
  if (isObject(meta) && isObject(meta.annotations)) delete meta.annotations[LAST_APPLIED_ANNOTATION];
  return `${goJson(copy)}\n`;
}
