/**
 * Field manager names and the request checks around them: the name inferred from User-Agent when
 * fieldManager is absent (the product before the first `/`, printable characters, at most 128 bytes,
 * "unknown" when nothing is left), and the PatchOptions rules upstream enforces (fieldManager required
 * for apply, force only for apply, length and printable characters).
 */
import { type FieldError, fieldErrors } from '../api/field-errors.js';
import { FIELD_MANAGER_MAX_LENGTH, validateFieldManager as validateManagerName } from '../api/objectmeta.js';


/** Upstream's name for a writer that gave neither fieldManager nor a usable User-Agent. */
export const UNKNOWN_MANAGER = 'unknown';

const printable = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;
const isPrintable = (ch: string): boolean => printable.test(ch);

const utf8Length = (ch: string): number => Buffer.byteLength(ch, 'utf8');

export function managerFromUserAgent(userAgent: string | undefined): string {
  const product = (userAgent ?? '').split('/')[0]!;
  let out = '';
  let bytes = 0;
  for (const ch of product) {
    if (!isPrintable(ch)) continue;
    if (bytes + utf8Length(ch) > FIELD_MANAGER_MAX_LENGTH) break;
    out += ch;
    bytes += utf8Length(ch);
  }
  return out || UNKNOWN_MANAGER;
}

/** The manager of a non-apply write: fieldManager if given, else derived from User-Agent. */
export const managerOrUserAgent = (fieldManager: string | undefined, userAgent: string | undefined): string =>
  fieldManager ? fieldManager : managerFromUserAgent(userAgent);

/** The request's fieldManager, by the one rule ObjectMeta uses for managedFields managers. */
export const validateFieldManager = (fieldManager: string): FieldError[] => validateManagerName(fieldManager, 'fieldManager');

/** PatchOptions checks; upstream answers them with 422 Invalid for kind PatchOptions. */
export function validatePatchOptions(o: { apply: boolean; fieldManager?: string; force?: boolean }): FieldError[] {
  const errs: FieldError[] = [];
  if (o.apply && !o.fieldManager) errs.push(fieldErrors.required('fieldManager', 'is required for apply patch'));
  if (!o.apply && o.force !== undefined) errs.push(fieldErrors.forbidden('force', 'may not be specified for non-apply patch'));
  return errs.concat(validateFieldManager(o.fieldManager ?? ''));
}
