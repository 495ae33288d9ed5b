/**
 * ConfigMap (core/v1, namespaced): string `data` and base64 `binaryData` under config-key names, a key
 * in only one of the two, at most 1 MiB in total, and `immutable`: once true, neither the data nor the
 * flag may change. Rules and messages follow upstream's ValidateConfigMap / ValidateConfigMapUpdate.
 */
import { type FieldError, fieldErrors } from '../../api/field-errors.js';
import { metadataAgeColumn, metadataNameColumn, validateBuiltinFinalizerNames } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { base64DecodedLength, byteLength, invalidEach, isConfigMapKey, jsonEqual } from '../../api/validation.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';

/** Size limit of a ConfigMap's (or Secret's) data, in bytes. */
export const MAX_DATA_SIZE = 1024 * 1024;
export const IMMUTABLE_WHEN_SET = 'field is immutable when `immutable` is set';

interface ConfigMap extends ApiObject {
  immutable?: boolean;
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

export const configMapSchema = objectSchema(
  'io.svc.api.core.v1.ConfigMap',
  {
    immutable: s.boolean({
      ptr: true,
      description: 'When true, data and binaryData can no longer be changed and the flag cannot be unset; the object can only be deleted.',
    }),
    data: s.map(s.string(), {
      description: "Text values by key. Keys are made of alphanumerics, '-', '_' and '.'; a key may not also be in binaryData. At most 1 MiB with binaryData.",
    }),
    binaryData: s.map(s.bytes(), { description: 'Byte values by key (base64 in JSON), for content that is not UTF-8 text. Keys follow the rules of data.' }),
  },
  [],
  'Configuration that is not secret, as key/value pairs for workloads to read.',
);

function validateData(cm: ConfigMap): FieldError[] {
  const errs: FieldError[] = [];
  const data = cm.data ?? {};
  const binary = cm.binaryData ?? {};
  let total = 0;
  for (const key of Object.keys(data)) {
    errs.push(...invalidEach(`data[${key}]`, key, isConfigMapKey(key)));
    if (Object.hasOwn(binary, key)) errs.push(fieldErrors.invalid(`data[${key}]`, key, 'duplicate of key present in binaryData'));
    total += byteLength(data[key] ?? '');
  }
  for (const key of Object.keys(binary)) {
    errs.push(...invalidEach(`binaryData[${key}]`, key, isConfigMapKey(key)));
    total += base64DecodedLength(binary[key] ?? '');
  }
  // The empty path: the limit applies to the object as a whole.
  if (total > MAX_DATA_SIZE) errs.push(fieldErrors.tooLong('', '', MAX_DATA_SIZE));
  return errs;
}

function validateCreate(obj: ApiObject): FieldError[] {
  return [...validateBuiltinFinalizerNames(obj.metadata), ...validateData(obj as ConfigMap)];
}

function validateUpdate(next: ApiObject, old: ApiObject): FieldError[] {
  const cm = next as ConfigMap;
  const prev = old as ConfigMap;
  const errs = validateBuiltinFinalizerNames(cm.metadata);
  if (prev.immutable === true) {
    if (cm.immutable !== true) errs.push(fieldErrors.forbidden('immutable', IMMUTABLE_WHEN_SET));
    if (!jsonEqual(cm.data ?? {}, prev.data ?? {})) errs.push(fieldErrors.forbidden('data', IMMUTABLE_WHEN_SET));
    if (!jsonEqual(cm.binaryData ?? {}, prev.binaryData ?? {})) errs.push(fieldErrors.forbidden('binaryData', IMMUTABLE_WHEN_SET));
  }
  errs.push(...validateData(cm));
  return errs;
}

const entryCount = (m: object | undefined): number => (m ? Object.keys(m).length : 0);

export const configMaps: ResourceType = {
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  plural: 'configmaps',
  singular: 'configmap',
  namespaced: true,
  shortNames: ['cm'],
  protobufPackage: 'svc.io.api.core.v1',
  schema: configMapSchema,
  validateCreate,
  validateUpdate,
  tableColumns: [
    metadataNameColumn,
    {
      name: 'Data',
      type: 'string',
      description: 'Number of entries in data and binaryData.',
      cell: (obj) => entryCount((obj as ConfigMap).data) + entryCount((obj as ConfigMap).binaryData),
    },
    metadataAgeColumn,
  ],
};
