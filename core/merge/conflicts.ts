/**
 * The 409 of a conflicting apply: upstream's message (`Apply failed with 1 conflict: conflict with
 * "alice": .spec.replicas`, or one `conflicts with <manager>:` block per manager followed by `- <path>`
 * lines) and one Status cause per conflicting field (reason FieldManagerConflict).
 */
import type { StatusCause } from '../api/status.js';
import type { OwnershipConflict } from './apply.js';
import { type ApplyConflict, ApplyConflictError } from './errors.js';
import { goQuote } from '../api/validation.js';
import { parseManagerKey } from './managers.js';
import { pathText } from './path-element.js';

/** How upstream names a manager in conflict messages: `"ctrl" with subresource "status" using v1`. */
export function describeManager(c: Pick<ApplyConflict, 'manager' | 'operation' | 'apiVersion' | 'subresource'>): string {
  let s = goQuote(c.manager);
  if (c.subresource) s += ` with subresource ${goQuote(c.subresource)}`;
  if (c.operation === 'Update') s += ` using ${c.apiVersion ?? ''}`;
  return s;
}

export function toApplyConflictError(conflicts: readonly OwnershipConflict[]): ApplyConflictError {
  const list: ApplyConflict[] = conflicts.map((c): ApplyConflict => {
    const id = parseManagerKey(c.manager);
    return {
      manager: id.manager,
      operation: id.operation,
      ...(id.operation === 'Update' && id.apiVersion ? { apiVersion: id.apiVersion } : {}),
      ...(id.subresource ? { subresource: id.subresource } : {}),
      field: pathText(c.path),
    };
  });
  return new ApplyConflictError(conflictMessage(conflicts, list), list);
}

/** `conflicts` arrive grouped by manager identifier in sorted order, as upstream sorts them for the message. */
function conflictMessage(raw: readonly OwnershipConflict[], list: readonly ApplyConflict[]): string {
  if (list.length === 1) return `Apply failed with 1 conflict: conflict with ${describeManager(list[0]!)}: ${list[0]!.field}`;
  const lines: string[] = [];
  list.forEach((c, i) => {
    if (i === 0 || raw[i - 1]!.manager !== raw[i]!.manager) lines.push(`conflicts with ${describeManager(c)}:`);
    lines.push(`- ${c.field}`);
  });
  return `Apply failed with ${list.length} conflicts: ${lines.join('\n')}`;
}

/** One Status cause per conflicting field, as the API server lists them in the 409's details. */
export function conflictCauses(err: ApplyConflictError): StatusCause[] {
  return err.conflicts.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with ${describeManager(c)}`, field: c.field }));
}
