/**
 * Errors raised by the patch and apply library. Each carries the HTTP status the upstream API server
 * answers with and the upstream message text, so the HTTP layer only wraps them in a Status:
 * MergeError (bad or failing patches), SchemaMismatchError (a value that does not fit the schema),
 * ApplyConflictError (field-ownership conflicts, 409).
 */

import { type FieldError, omitValue } from '../api/field-errors.js';

/** 400 BadRequest, 413 RequestEntityTooLarge, 422 Invalid/unprocessable, 500 InternalError. */
export type MergeErrorStatus = 400 | 413 | 422 | 500;

export class MergeError extends Error {
  constructor(
    message: string,
    readonly status: MergeErrorStatus = 422,
  ) {
    super(message);
    this.name = 'MergeError';
  }
}

/**
 * A strategic merge patch whose content the merge cannot follow (an unknown `$patch`, a directive of
 * the wrong shape, list items that do not fit the list). Upstream's library returns these as plain
 * errors, which its API server answers with a 500; they are the client's mistake, so they are a 400
 * here, with upstream's text after the patch field they were found at.
 */
export class PatchContentError extends MergeError {
  private located = false;
  constructor(message: string) {
    super(message, 400);
    this.name = 'PatchContentError';
  }

  /** Names the field (innermost first: later calls keep it), e.g. `metadata.$setElementOrder/finalizers`. */
  at(field: string): this {
    if (!this.located && field) {
      this.message = `${field}: ${this.message}`;
      this.located = true;
    }
    return this;
  }
}

/** One schema violation: `path` in upstream's field-path form (`.spec.ports[name="x"].port`). */
export interface TypeViolation {
  path: string;
  message: string;
}

/** Text of a list of violations, as structured-merge-diff joins them. */
export function violationsText(errs: readonly TypeViolation[]): string {
  const one = (e: TypeViolation): string => (e.path ? `${e.path}: ${e.message}` : e.message);
  if (errs.length === 1) return one(errs[0]!);
  return ['errors:', ...errs.map((e) => `  ${one(e)}`)].join('\n');
}

/**
 * A value that does not match the schema. `subject` says which input was wrong: the applied patch
 * (the client's fault: 422), or the live/new object of an update (the server's data: 500 upstream).
 */
export class SchemaMismatchError extends MergeError {
  constructor(
    readonly subject: 'patch' | 'live' | 'new',
    readonly violations: readonly TypeViolation[],
  ) {
    super(violationsText(violations), subject === 'patch' ? 422 : 500);
    this.name = 'SchemaMismatchError';
  }
}

/** The violations as field errors for a 422 Invalid Status (path without the leading dot). */
export function violationFieldErrors(err: SchemaMismatchError): FieldError[] {
  return err.violations.map((v) => ({ type: 'FieldValueTypeInvalid', field: v.path.replace(/^\./, ''), badValue: omitValue, detail: v.message }));
}

/** One conflicting field, as the 409's causes list it. */
export interface ApplyConflict {
  manager: string;
  operation: 'Apply' | 'Update';
  /** Set for Update managers (they are keyed by apiVersion). */
  apiVersion?: string;
  subresource?: string;
  /** Upstream path text, e.g. `.spec.containers[name="web"].image`. */
  field: string;
}

export class ApplyConflictError extends Error {
  readonly status = 409;
  constructor(
    message: string,
    readonly conflicts: readonly ApplyConflict[],
  ) {
    super(message);
    this.name = 'ApplyConflictError';
  }
}
