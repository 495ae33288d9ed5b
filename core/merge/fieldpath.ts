/**
 * Field paths for server-side apply, structured-merge-diff's fieldpath package: path elements
 * (path-element.ts), the FieldSet trie (field-set.ts) and the FieldsV1 encoding (fields-v1.ts).
 * This module is the one import for callers outside the SSA core.
 */
export {
  type KeyField,
  type Path,
  type PathElement,
  comparePE,
  fieldPE,
  indexPE,
  keyPE,
  parsePE,
  pathText,
  peText,
  valuePE,
} from './path-element.js';
export { FieldSet, type SetNode } from './field-set.js';
export { decodeFieldsV1, encodeFieldsV1 } from './fields-v1.js';
