/**
 * Structural schemas: the one description of a kind's shape. Decoding (type checks, unknown-field
 * pruning, canonical field order), strategic merge patch (patchStrategy / patchMergeKey), server-side
 * apply (list/map/struct types), OpenAPI publication and Table output all read this tree, so a field's
 * merge behaviour is declared exactly once, next to its type.
 *
 * Encoding flags mirror Go's JSON tags on the upstream types, so stored and returned objects have
 * upstream's shape: a non-pointer scalar with `omitempty` is dropped when zero, a pointer keeps its
 * zero value, a non-pointer struct is always written (as `{}` when empty), a non-pointer time is
 * written as `null` when unset.
 */

export type ListType = 'atomic' | 'set' | 'map';
export type MapType = 'atomic' | 'granular';
export type PatchStrategy = 'merge' | 'replace' | 'retainKeys' | 'merge,retainKeys';

export type ScalarType = 'string' | 'integer' | 'number' | 'boolean' | 'int-or-string';
export type ScalarFormat = 'int32' | 'int64' | 'double' | 'byte' | 'date-time' | 'date-time-micro' | 'quantity';

/** A CEL rule on a node (x-kubernetes-validations), as a custom resource definition declares it. */
export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: 'FieldValueRequired' | 'FieldValueDuplicate' | 'FieldValueInvalid' | 'FieldValueForbidden';
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

/**
 * OpenAPI v3 value validations (custom resource schemas): checked on the decoded, defaulted object by
 * core/schema/values.ts. Inside allOf / anyOf / oneOf / not they may also constrain children
 * (`properties`, `items`, `additionalProperties`), which never change a node's type.
 */
export interface ValueConstraints {
  /** OpenAPI format (upstream's list: core/schema/formats.ts); only checked, never normalizes. */
  format?: string;
  enum?: readonly unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  required?: readonly string[];
  allOf?: readonly ValueConstraints[];
  anyOf?: readonly ValueConstraints[];
  oneOf?: readonly ValueConstraints[];
  not?: ValueConstraints;
  properties?: Readonly<Record<string, ValueConstraints>>;
  items?: ValueConstraints;
  additionalProperties?: ValueConstraints;
}

interface Common {
  /** What the field holding this value means (OpenAPI `description`, shown by `kubectl explain`). */
  description?: string;
  /** Go pointer field: an explicit zero value is kept; only absence (or null) means unset. */
  ptr?: boolean;
  /** Go field without `omitempty`: written even when zero (a pointer, with `ptr`, as null when unset). */
  always?: boolean;
  /** null is a value of this node (OpenAPI `nullable`): kept, not pruned or defaulted. */
  nullable?: boolean;
  /** Set when the value is absent (or a null the node does not allow), as upstream's structural defaulting. */
  default?: unknown;
  /** Value validations (custom resource schemas). */
  constraints?: ValueConstraints;
  /** CEL rules (x-kubernetes-validations) evaluated with this node's value as `self`. */
  rules?: readonly ValidationRule[];
}

export interface ScalarSchema extends Common {
  kind: 'scalar';
  type: ScalarType;
  format?: ScalarFormat;
  enum?: readonly string[];
}

export interface StructSchema extends Common {
  kind: 'struct';
  /** Definition name used in OpenAPI, e.g. `io.svc.api.core.v1.ConfigMap`. */
  name: string;
  /** Fields in Go declaration order (the order objects are written in). */
  fields: Record<string, Schema>;
  required?: readonly string[];
  /** x-kubernetes-map-type on a struct: atomic structs are owned and replaced as a whole. */
  mapType?: MapType;
  /** What the type itself is (its OpenAPI definition's description); `description` is the field's. */
  typeDescription?: string;
  /** x-kubernetes-preserve-unknown-fields: fields not declared are kept as they are (never reported). */
  preserveUnknownFields?: boolean;
  /** x-kubernetes-embedded-resource: an object with apiVersion, kind and ObjectMeta metadata. */
  embeddedResource?: boolean;
  /** Published inline in OpenAPI rather than as a named definition (custom resource schemas nest this way). */
  inline?: boolean;
}

export interface MapSchema extends Common {
  kind: 'map';
  values: Schema;
  mapType?: MapType;
}

export interface ListSchema extends Common {
  kind: 'list';
  items: Schema;
  listType?: ListType;
  listMapKeys?: readonly string[];
  patchStrategy?: PatchStrategy;
  patchMergeKey?: string;
}

/** Arbitrary JSON (RawExtension, preserve-unknown-fields): objects granular, lists atomic. */
export interface UntypedSchema extends Common {
  kind: 'untyped';
}

export type Schema = ScalarSchema | StructSchema | MapSchema | ListSchema | UntypedSchema;

type Opts = Omit<Common, never>;

function scalar(type: ScalarType, format?: ScalarFormat) {
  return (o: Opts & { enum?: readonly string[] } = {}): ScalarSchema => {
    const sc: ScalarSchema = { kind: 'scalar', type, ...o };
    if (format) sc.format = format;
    return sc;
  };
}

/** Schema builders. Each call returns a fresh node, so per-field flags never leak between fields. */
export const s = {
  string: scalar('string'),
  int32: scalar('integer', 'int32'),
  int64: scalar('integer', 'int64'),
  number: scalar('number', 'double'),
  boolean: scalar('boolean'),
  /** base64-encoded bytes ([]byte in Go). */
  bytes: scalar('string', 'byte'),
  /** metav1.Time: RFC 3339, whole seconds. */
  time: scalar('string', 'date-time'),
  /** metav1.MicroTime: RFC 3339 with microseconds. */
  microTime: scalar('string', 'date-time-micro'),
  quantity: scalar('string', 'quantity'),
  intOrString: scalar('int-or-string'),
  struct: (name: string, fields: Record<string, Schema>, o: Opts & { required?: readonly string[]; mapType?: MapType; typeDescription?: string } = {}): StructSchema => ({
    kind: 'struct',
    name,
    fields,
    ...o,
  }),
  map: (values: Schema, o: Opts & { mapType?: MapType } = {}): MapSchema => ({ kind: 'map', values, ...o }),
  list: (
    items: Schema,
    o: Opts & { listType?: ListType; listMapKeys?: readonly string[]; patchStrategy?: PatchStrategy; patchMergeKey?: string } = {},
  ): ListSchema => ({ kind: 'list', items, ...o }),
  untyped: (o: Opts = {}): UntypedSchema => ({ kind: 'untyped', ...o }),
  /** The same schema node with different field flags (for reusing a struct definition as a field). */
  field: <T extends Schema>(schema: T, o: Opts): T => ({ ...schema, ...o }),
};

/**
 * The list semantics server-side apply uses: an explicit listType wins; otherwise a
 * patchStrategy=merge list is a map keyed by patchMergeKey (a set for scalar items); otherwise atomic.
 */
export function effectiveListType(l: ListSchema): { type: ListType; keys: readonly string[] } {
  if (l.listType) return { type: l.listType, keys: l.listType === 'map' ? (l.listMapKeys ?? (l.patchMergeKey ? [l.patchMergeKey] : [])) : [] };
  if (l.patchStrategy?.includes('merge')) {
    if (l.items.kind === 'scalar') return { type: 'set', keys: [] };
    if (l.patchMergeKey) return { type: 'map', keys: [l.patchMergeKey] };
  }
  return { type: 'atomic', keys: [] };
}

/** Whether a struct or map is replaced and owned as a whole. */
export const isAtomic = (sch: StructSchema | MapSchema): boolean => sch.mapType === 'atomic';
