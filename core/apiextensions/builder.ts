/**
 * From a CustomResourceDefinition to the resource types it serves (one per served version): a pure
 * function of the definition and the store revision it was read at, used alike by the main thread
 * (which puts the types in the type registry once the definition is Established) and by pool workers
 * (which build the type of a task's definition revision from the stored definition). Everything a kind
 * declares comes from the definition: names (as accepted), scope, the version's schema (converted to
 * the structural Schema: decoding, pruning, defaults, value checks, CEL rules, merge markers), the
 * status and scale subresources, printer columns, selectable fields, deprecation, and conversion
 * between the stored and the served version.
 */
import { type FieldError, fieldErrors, GoLiteral } from '../api/field-errors.js';
import { metadataNameColumn } from '../api/objectmeta.js';
import type { ApiObject } from '../api/types.js';
import { evaluateRules } from '../schema/cel.js';
import { applyDefaults } from '../schema/defaults.js';
import { customResourceSchema } from '../schema/openapi-v3.js';
import type { StructSchema } from '../schema/schema.js';
import { canonicalize, decodeStructural } from '../schema/structural.js';
import { validateValues } from '../schema/values.js';
import type { CustomResourceStorage, ResourceType, SubresourceType, TableColumn, Verb } from '../registry/resource-type.js';
import { allVerbs } from '../registry/resource-type.js';
import { type Converter, converterFor } from './conversion.js';
import { findAll, parseJsonPath } from './jsonpath.js';
import { scaleSubresource } from './scale.js';
import { type CRDVersion, type CustomResourceDefinition, isConditionTrue, reversedGroup } from './types.js';

const apiVersionOf = (crd: CustomResourceDefinition, version: string): string => `${crd.spec.group}/${version}`;

/** The version objects are written in. */
export const storageVersionOf = (crd: CustomResourceDefinition): string | undefined => crd.spec.versions.find((v) => v.storage)?.name;

/** The resource types of every served version of `crd`, as read at store revision `revision`. */
export function customResourceTypes(crd: CustomResourceDefinition, revision: number): ResourceType[] {
  const storage = storageVersionOf(crd);
  if (!storage) return [];
  const converter = converterFor(crd);
  const schemas = new Map(crd.spec.versions.map((v) => [v.name, schemaOf(crd, v)]));
  return crd.spec.versions.filter((v) => v.served).map((v) => versionType(crd, v, revision, schemas, converter, storage));
}

function schemaOf(crd: CustomResourceDefinition, v: CRDVersion): StructSchema {
  const kind = crd.status?.acceptedNames?.kind || crd.spec.names.kind;
  return customResourceSchema(v.schema?.openAPIV3Schema, { name: `${reversedGroup(crd.spec.group)}.${v.name}.${kind}` });
}

/** An object (any version) canonical and defaulted in version `v`'s schema. */
function normalized(obj: ApiObject, schema: StructSchema): ApiObject {
  const r = decodeStructural<ApiObject>(obj, schema);
  return canonicalize(applyDefaults(r.value, schema), schema);
}

function versionType(
  crd: CustomResourceDefinition,
  v: CRDVersion,
  revision: number,
  schemas: ReadonlyMap<string, StructSchema>,
  converter: Converter,
  storage: string,
): ResourceType {
  const names = { ...crd.spec.names, ...(crd.status?.acceptedNames?.kind ? crd.status.acceptedNames : {}) };
  const schema = schemas.get(v.name)!;
  const apiVersion = apiVersionOf(crd, v.name);
  const storageApiVersion = apiVersionOf(crd, storage);
  const storageSchema = schemas.get(storage)!;
  const hasStatus = !!v.subresources?.status;
  const terminating = isConditionTrue(crd, 'Terminating') || !!crd.metadata.deletionTimestamp;
  const verbs: readonly Verb[] = terminating ? allVerbs.filter((x) => x !== 'create') : allVerbs;

  const custom: CustomResourceStorage = {
    definition: crd.metadata.name!,
    revision,
    storageApiVersion,
    webhook: converter.webhook && crd.spec.versions.length > 1,
    fromStorageSync(obj) {
      if (obj.apiVersion !== apiVersion && converter.webhook) return undefined;
      return normalized({ ...obj, apiVersion }, schema);
    },
    async fromStorage(objs) {
      const out = await converter.convert(objs, apiVersion);
      return out.map((o) => normalized(o, schema));
    },
    async toStorage(obj) {
      const [o] = await converter.convert([{ ...obj, kind: names.kind, apiVersion }], storageApiVersion);
      return { ...normalized(o!, storageSchema), apiVersion: storageApiVersion };
    },
  };

  const validate = (obj: ApiObject, old: ApiObject | undefined): FieldError[] => {
    const errs = validateValues(obj, schema);
    if (errs.some(blocking)) {
      errs.push(fieldErrors.invalid('<nil>', new GoLiteral('"null"'), 'some validation rules were not checked because the object was invalid; correct the existing errors to complete validation'));
      return errs;
    }
    return [...errs, ...evaluateRules(obj, old, schema)];
  };

  const subresources: Record<string, SubresourceType> = {};
  if (hasStatus) subresources.status = statusSubresource(validate);
  if (v.subresources?.scale) subresources.scale = scaleSubresource(v.subresources.scale, validate);

  const rt: ResourceType = {
    group: crd.spec.group,
    version: v.name,
    kind: names.kind,
    plural: crd.spec.names.plural,
    singular: names.singular || names.kind.toLowerCase(),
    namespaced: crd.spec.scope === 'Namespaced',
    verbs,
    schema,
    defaults: (obj) => void applyDefaults(obj, schema),
    prepareForCreate(obj) {
      if (hasStatus) delete obj.status;
    },
    prepareForUpdate(next, old) {
      if (!hasStatus) return;
      if (old.status !== undefined) next.status = old.status;
      else delete next.status;
    },
    generationOf: (obj) => contentOf(obj),
    validateCreate: (obj) => validate(obj, undefined),
    validateUpdate: (next, old) => validate(next, old),
    tableColumns: tableColumnsOf(v),
    unconditionalUpdate: false,
    custom,
  };
  if (names.shortNames?.length) rt.shortNames = [...names.shortNames];
  if (names.categories?.length) rt.categories = [...names.categories];
  if (Object.keys(subresources).length) {
    rt.subresources = subresources;
    rt.resetFields = hasStatus ? { '': ['status'], status: ['spec'] } : {};
  }
  const fields = selectableFieldsOf(v);
  if (fields) rt.selectableFields = fields;
  if (v.deprecated) rt.deprecationWarning = v.deprecationWarning ?? `${apiVersion} ${names.kind} is deprecated`;
  return rt;
}

/** Everything but metadata: a change there bumps generation (status is carried over when it has its own endpoint). */
function contentOf(obj: ApiObject): unknown {
  const { metadata: _m, ...rest } = obj;
  return rest;
}

/** Value errors that stop CEL rules from running (upstream's blocking errors). */
const blocking = (e: FieldError): boolean =>
  e.type === 'FieldValueNotSupported' || e.type === 'FieldValueRequired' || e.type === 'FieldValueTooLong' || e.type === 'FieldValueTooMany' || e.type === 'FieldValueTypeInvalid';

/** The status endpoint: only `.status` of the sent object is taken; the schema's checks run on the result. */
function statusSubresource(validate: (obj: ApiObject, old: ApiObject | undefined) => FieldError[]): SubresourceType {
  return {
    verbs: ['get', 'patch', 'update'],
    prepareForUpdate(next, old) {
      const status = next.status;
      const managedFields = next.metadata.managedFields;
      for (const k of Object.keys(next)) delete next[k];
      Object.assign(next, structuredClone(old));
      if (managedFields) next.metadata.managedFields = managedFields;
      else delete next.metadata.managedFields;
      if (status !== undefined) next.status = status;
      else delete next.status;
    },
    validateUpdate: (next, old) => validate(next, old),
  };
}

function cellValue(values: unknown[], type: string): unknown {
  if (values.length === 0) return null;
  const one = (x: unknown): unknown => {
    if (x === null || x === undefined) return null;
    if (typeof x === 'object') return JSON.stringify(x);
    if (type === 'string' && typeof x !== 'string') return String(x);
    return x;
  };
  if (values.length === 1) return one(values[0]);
  return values.map((x) => String(one(x))).join(',');
}

/** Name, then the version's printer columns (or Age when it has none), as upstream's table of a custom resource. */
function tableColumnsOf(v: CRDVersion): TableColumn[] {
  const name: TableColumn = { ...metadataNameColumn };
  const cols = v.additionalPrinterColumns?.length
    ? v.additionalPrinterColumns
    : [{ name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'CreationTimestamp is a timestamp representing the server time when this object was created.' }];
  return [
    name,
    ...cols.map((c): TableColumn => {
      const path = parseJsonPath(c.jsonPath);
      const col: TableColumn = {
        name: c.name,
        type: c.type as TableColumn['type'],
        description: c.description ?? '',
        cell: (obj) => cellValue(findAll(path, obj), c.type),
      };
      if (c.format) col.format = c.format;
      if (c.priority) col.priority = c.priority;
      return col;
    }),
  ];
}

function selectableFieldsOf(v: CRDVersion): ResourceType['selectableFields'] | undefined {
  if (!v.selectableFields?.length) return undefined;
  const out: Record<string, (obj: ApiObject) => string | undefined> = {};
  for (const f of v.selectableFields) {
    const path = parseJsonPath(f.jsonPath);
    out[f.jsonPath.replace(/^\./, '')] = (obj) => {
      const found = findAll(path, obj)[0];
      return found === undefined || found === null ? '' : String(found);
    };
  }
  return out;
}
