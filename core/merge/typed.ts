/**
 * Typed values for server-side apply, structured-merge-diff's typed package: a JSON value read
 * through the schema. Validation, field sets, merge, comparison, removal and schema reconciliation
 * each live in their own file; this module is the one import for the rest of the library.
 */
export { validateValue } from './typed-validate.js';
export { toFieldSet } from './typed-fieldset.js';
export { mergeValues } from './typed-merge.js';
export { type Comparison, compareValues, isSame } from './typed-compare.js';
export { removeItems } from './typed-remove.js';
export { ensureNamedFieldsAreMembers, reconcileWithSchema } from './set-schema.js';
