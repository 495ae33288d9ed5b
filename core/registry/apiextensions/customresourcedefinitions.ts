/**
 * CustomResourceDefinition (apiextensions.svc.io/v1, cluster-scoped): a kind defined at run time.
 * Defaults (singular, listKind, conversion None, webhook service port 443), the storage version added
 * to status.storedVersions on every write, status as its own endpoint, generation on spec changes,
 * and upstream's validation (core/apiextensions/validation.ts). A first delete marks it Terminating
 * with the cleanup finalizer; the definition controller removes every object of its resource, then
 * the finalizer (core/apiextensions/controller.ts).
 */
import type { ApiObject } from '../../api/types.js';
import { CLEANUP_FINALIZER, type CustomResourceDefinition, setCondition } from '../../apiextensions/types.js';
import { validateCreate, validateStatusUpdate, validateUpdate } from '../../apiextensions/validation.js';
import { objectSchema } from '../../schema/meta.js';
import { s, type Schema, type StructSchema } from '../../schema/schema.js';
import { decodeStructural } from '../../schema/structural.js';
import type { ResourceType, SubresourceType } from '../resource-type.js';
import { builtinResourceTypes } from '../catalog.js';

const NS = 'io.svc.apiextensions-apiserver.pkg.apis.apiextensions.v1';

/** JSONSchemaProps: recursive. `items` and `additionalProperties` may be a schema or another shape; typed by hand below. */
const props: StructSchema = s.struct(`${NS}.JSONSchemaProps`, {}, { typeDescription: 'A JSON-Schema following Specification Draft 4 (http://json-schema.org/).' });
const propsField = (description: string): StructSchema => s.field(props, { ptr: true, description });
const propsMap = (description: string): Schema => s.map(props, { description });
const propsList = (description: string): Schema => s.list(props, { description });
const ptrNumber = (description: string): Schema => s.number({ ptr: true, description });
const ptrInt = (description: string): Schema => s.int64({ ptr: true, description });

const validationRule = s.struct(
  `${NS}.ValidationRule`,
  {
    rule: s.string({ always: true, description: 'A CEL expression that must evaluate to true; `self` is the value at this node, `oldSelf` the value before an update.' }),
    message: s.string({ description: 'Message shown when the rule fails.' }),
    messageExpression: s.string({ description: 'A CEL expression that evaluates to the message shown when the rule fails.' }),
    reason: s.string({ ptr: true, description: 'Machine-readable reason of a failure: FieldValueInvalid, FieldValueForbidden, FieldValueRequired or FieldValueDuplicate.' }),
    fieldPath: s.string({ description: 'Where a failure is reported, relative to this node (for example .spec.replicas).' }),
    optionalOldSelf: s.boolean({ ptr: true, description: 'Run a transition rule on create too, with oldSelf an optional that has no value.' }),
  },
  { required: ['rule'], typeDescription: 'A CEL validation rule.' },
);

Object.assign(props.fields, {
  id: s.string({ description: 'Not supported.' }),
  $schema: s.string({ description: 'Not supported.' }),
  $ref: s.string({ ptr: true, description: 'Not supported.' }),
  description: s.string({ description: 'What the value means.' }),
  type: s.string({ description: 'The JSON type: string, number, integer, boolean, array or object.' }),
  format: s.string({ description: 'A format of the type, such as int32, date-time or uuid.' }),
  title: s.string({ description: 'A short title.' }),
  default: s.untyped({ ptr: true, description: 'The value used when none is given.' }),
  maximum: ptrNumber('Largest allowed number.'),
  exclusiveMaximum: s.boolean({ description: 'Whether maximum itself is excluded.' }),
  minimum: ptrNumber('Smallest allowed number.'),
  exclusiveMinimum: s.boolean({ description: 'Whether minimum itself is excluded.' }),
  maxLength: ptrInt('Most characters of a string.'),
  minLength: ptrInt('Fewest characters of a string.'),
  pattern: s.string({ description: 'A regular expression a string must match.' }),
  maxItems: ptrInt('Most items of an array.'),
  minItems: ptrInt('Fewest items of an array.'),
  uniqueItems: s.boolean({ description: 'Not supported when true.' }),
  multipleOf: ptrNumber('A number the value must be a multiple of.'),
  enum: s.list(s.untyped(), { description: 'The allowed values.' }),
  maxProperties: ptrInt('Most properties of an object.'),
  minProperties: ptrInt('Fewest properties of an object.'),
  required: s.list(s.string(), { description: 'Properties that must be present.' }),
  items: s.untyped({ ptr: true, description: 'The schema of array items.' }),
  allOf: propsList('Schemas the value must all match.'),
  oneOf: propsList('Schemas of which the value must match exactly one.'),
  anyOf: propsList('Schemas of which the value must match at least one.'),
  not: propsField('A schema the value must not match.'),
  properties: propsMap('The schemas of an object\'s properties.'),
  additionalProperties: s.untyped({ ptr: true, description: 'The schema of the values of a map.' }),
  patternProperties: propsMap('Not supported.'),
  dependencies: s.map(s.untyped(), { description: 'Not supported.' }),
  additionalItems: s.untyped({ ptr: true, description: 'Not supported.' }),
  definitions: propsMap('Not supported.'),
  externalDocs: s.struct(`${NS}.ExternalDocumentation`, { description: s.string({ description: 'What the documentation is about.' }), url: s.string({ description: 'Where it is.' }) }, { ptr: true, description: 'Where more is documented.', typeDescription: 'A pointer to documentation elsewhere.' }),
  example: s.untyped({ ptr: true, description: 'An example value.' }),
  nullable: s.boolean({ description: 'Whether null is a value of this node.' }),
  'x-kubernetes-preserve-unknown-fields': s.boolean({ ptr: true, description: 'Keep fields the schema does not specify.' }),
  'x-kubernetes-embedded-resource': s.boolean({ description: 'The value is an object with apiVersion, kind and metadata.' }),
  'x-kubernetes-int-or-string': s.boolean({ description: 'The value is an integer or a string.' }),
  'x-kubernetes-list-map-keys': s.list(s.string(), { listType: 'atomic', description: 'The keys identifying items of a map list.' }),
  'x-kubernetes-list-type': s.string({ ptr: true, description: 'atomic, set or map: how a list is merged.' }),
  'x-kubernetes-map-type': s.string({ ptr: true, description: 'atomic or granular: how an object is merged.' }),
  'x-kubernetes-validations': s.list(validationRule, { listType: 'map', listMapKeys: ['rule'], patchStrategy: 'merge', patchMergeKey: 'rule', description: 'CEL validation rules.' }),
});

const namesSchema = s.struct(
  `${NS}.CustomResourceDefinitionNames`,
  {
    plural: s.string({ always: true, description: 'Plural name of the resource, used in its URL (lower-case).' }),
    singular: s.string({ description: 'Singular name (lower-case); defaults to the lower-cased kind.' }),
    shortNames: s.list(s.string(), { listType: 'atomic', description: 'Short names for the CLI, like shortNames of built-in kinds.' }),
    kind: s.string({ always: true, description: 'The kind of the objects (CamelCase, singular).' }),
    listKind: s.string({ description: 'The kind of lists of the objects; defaults to `<kind>List`.' }),
    categories: s.list(s.string(), { listType: 'atomic', description: 'Groups of resources this one belongs to (such as all), for the CLI.' }),
  },
  { required: ['plural', 'kind'], typeDescription: 'The names a custom resource is served under.' },
);

const columnSchema = s.struct(
  `${NS}.CustomResourceColumnDefinition`,
  {
    name: s.string({ always: true, description: 'Column heading.' }),
    type: s.string({ always: true, description: 'integer, number, string, boolean or date.' }),
    format: s.string({ description: 'A format of the type, such as int32 or date-time.' }),
    description: s.string({ description: 'What the column shows.' }),
    priority: s.int32({ description: 'Importance; columns above 0 are shown only in wide output.' }),
    jsonPath: s.string({ always: true, description: 'A simple JSONPath evaluated on each object to fill the column.' }),
  },
  { required: ['name', 'type', 'jsonPath'], typeDescription: 'A column of the table output of a custom resource.' },
);

const versionSchema = s.struct(
  `${NS}.CustomResourceDefinitionVersion`,
  {
    name: s.string({ always: true, description: 'The version name, as in /apis/<group>/<version>.' }),
    served: s.boolean({ always: true, description: 'Whether the version is served.' }),
    storage: s.boolean({ always: true, description: 'Whether objects are stored in this version; exactly one version is.' }),
    deprecated: s.boolean({ description: 'Every request to a deprecated version gets a Warning header.' }),
    deprecationWarning: s.string({ ptr: true, description: 'The warning sent instead of the default one.' }),
    schema: s.struct(`${NS}.CustomResourceValidation`, { openAPIV3Schema: propsField('The OpenAPI v3 schema of the objects.') }, { ptr: true, description: 'How objects of this version are validated and pruned.', typeDescription: 'The schema of one version.' }),
    subresources: s.struct(
      `${NS}.CustomResourceSubresources`,
      {
        status: s.struct(`${NS}.CustomResourceSubresourceStatus`, {}, { ptr: true, description: 'Serve .status at its own endpoint.', typeDescription: 'The status subresource: no fields.' }),
        scale: s.struct(
          `${NS}.CustomResourceSubresourceScale`,
          {
            specReplicasPath: s.string({ always: true, description: 'JSONPath of the desired replicas (under .spec).' }),
            statusReplicasPath: s.string({ always: true, description: 'JSONPath of the observed replicas (under .status).' }),
            labelSelectorPath: s.string({ ptr: true, description: 'JSONPath of the label selector as a string (under .spec or .status).' }),
          },
          { ptr: true, description: 'Serve a Scale at /scale.', typeDescription: 'Where the scale subresource reads and writes replicas.' },
        ),
      },
      { ptr: true, description: 'The subresources served for this version.', typeDescription: 'The status and scale subresources of a version.' },
    ),
    additionalPrinterColumns: s.list(columnSchema, { listType: 'atomic', description: 'Columns of the table output beside the name.' }),
    selectableFields: s.list(s.struct(`${NS}.SelectableField`, { jsonPath: s.string({ always: true, description: 'JSONPath of a field usable in field selectors.' }) }, { required: ['jsonPath'], typeDescription: 'A field of the objects usable in field selectors.' }), {
      listType: 'atomic',
      description: 'Fields usable in field selectors.',
    }),
  },
  { required: ['name', 'served', 'storage'], typeDescription: 'One version of a custom resource definition.' },
);

const conversionSchema = s.struct(
  `${NS}.CustomResourceConversion`,
  {
    strategy: s.string({ always: true, description: 'None (only apiVersion changes) or Webhook.' }),
    webhook: s.struct(
      `${NS}.WebhookConversion`,
      {
        clientConfig: s.struct(
          `${NS}.WebhookClientConfig`,
          {
            url: s.string({ ptr: true, description: 'https URL of the webhook.' }),
            service: s.struct(
              `${NS}.ServiceReference`,
              {
                namespace: s.string({ always: true, description: 'Namespace of the Service.' }),
                name: s.string({ always: true, description: 'Name of the Service.' }),
                path: s.string({ ptr: true, description: 'URL path the webhook is served at.' }),
                port: s.int32({ ptr: true, description: 'Port of the Service (default 443).' }),
              },
              { ptr: true, description: 'A Service of the cluster that runs the webhook.', typeDescription: 'A reference to a Service.' },
            ),
            caBundle: s.bytes({ description: 'PEM CA certificates the webhook\'s serving certificate is checked against.' }),
          },
          { ptr: true, description: 'How to reach the webhook.', typeDescription: 'How the API server reaches a webhook: a URL or a Service, and the CA to trust.' },
        ),
        conversionReviewVersions: s.list(s.string(), { always: true, listType: 'atomic', description: 'ConversionReview versions the webhook understands, in order of preference.' }),
      },
      { ptr: true, description: 'The webhook that converts (strategy Webhook).', typeDescription: 'A conversion webhook.' },
    ),
  },
  { ptr: true, required: ['strategy'], description: 'How objects are converted between versions.', typeDescription: 'How objects are converted between the versions of a definition.' },
);

const conditionSchema = s.struct(
  `${NS}.CustomResourceDefinitionCondition`,
  {
    type: s.string({ always: true, description: 'Established, NamesAccepted, NonStructuralSchema, Terminating or KubernetesAPIApprovalPolicyConformant.' }),
    status: s.string({ always: true, description: 'True, False or Unknown.' }),
    lastTransitionTime: s.time({ description: 'When the status last changed.' }),
    reason: s.string({ description: 'Machine-readable reason of the last transition.' }),
    message: s.string({ description: 'Human-readable detail of the last transition.' }),
  },
  { required: ['type', 'status'], typeDescription: 'One observation of a definition\'s state.' },
);

export const crdSchema = objectSchema(
  `${NS}.CustomResourceDefinition`,
  {
    spec: s.struct(
      `${NS}.CustomResourceDefinitionSpec`,
      {
        group: s.string({ always: true, description: 'The API group of the resource (a domain with at least one dot).' }),
        names: s.field(namesSchema, { description: 'The names the resource is served under.' }),
        scope: s.string({ always: true, description: 'Cluster or Namespaced.' }),
        versions: s.list(versionSchema, { always: true, description: 'The versions of the resource.' }),
        conversion: conversionSchema,
        preserveUnknownFields: s.boolean({ description: 'Not supported in v1 (use x-kubernetes-preserve-unknown-fields).' }),
      },
      { required: ['group', 'names', 'scope', 'versions'], description: 'What the definition defines.', typeDescription: 'The kind a definition defines: group, names, scope, versions, conversion.' },
    ),
    status: s.struct(
      `${NS}.CustomResourceDefinitionStatus`,
      {
        conditions: s.list(conditionSchema, { always: true, listType: 'map', listMapKeys: ['type'], description: 'Observations of the definition\'s state.' }),
        acceptedNames: s.field(namesSchema, { always: true, description: 'The names actually served; they may lag behind spec.names while those conflict.' }),
        storedVersions: s.list(s.string(), { always: true, listType: 'atomic', description: 'Every version objects have ever been stored in.' }),
      },
      { description: 'The definition\'s observed state.', typeDescription: 'The observed state of a definition.' },
    ),
  },
  ['spec'],
  'A custom resource definition: a kind served by the API server, defined at run time.',
);

/**
 * Groups of built-in kinds, read when first needed: the catalog lists this kind too, so it is never
 * imported before the catalog (which must stay the only module importing this one).
 */
let builtinGroups: ReadonlySet<string> | undefined;
const groupsOfBuiltins = (): ReadonlySet<string> => (builtinGroups ??= new Set(builtinResourceTypes.map((t) => t.group).filter((g) => g !== '')));

type CRD = CustomResourceDefinition;

/** `items` and `additionalProperties` are schemas too: typed here (pruned, canonical), all the way down. */
function typeNestedSchemas(p: unknown): void {
  if (!p || typeof p !== 'object' || Array.isArray(p)) return;
  const o = p as Record<string, unknown>;
  for (const k of ['items', 'additionalProperties'] as const) {
    const v = o[k];
    if (v && typeof v === 'object' && !Array.isArray(v)) o[k] = decodeStructural(v, props).value;
  }
  for (const k of ['items', 'additionalProperties', 'not'] as const) typeNestedSchemas(o[k]);
  for (const k of ['allOf', 'oneOf', 'anyOf'] as const) if (Array.isArray(o[k])) (o[k] as unknown[]).forEach(typeNestedSchemas);
  for (const k of ['properties', 'patternProperties', 'definitions'] as const) {
    const m = o[k];
    if (m && typeof m === 'object') Object.values(m).forEach(typeNestedSchemas);
  }
}

function defaults(obj: ApiObject): void {
  const crd = obj as CRD;
  const spec = crd.spec;
  if (!spec || typeof spec !== 'object') return;
  const names = spec.names;
  if (names) {
    if (!names.singular && names.kind) names.singular = names.kind.toLowerCase();
    if (!names.listKind && names.kind) names.listKind = `${names.kind}List`;
  }
  spec.conversion ??= { strategy: 'None' };
  const svc = spec.conversion.webhook?.clientConfig?.service;
  if (svc && svc.port === undefined) svc.port = 443;
  for (const v of spec.versions ?? []) typeNestedSchemas(v.schema?.openAPIV3Schema);
  crd.status ??= {};
  if (!crd.status.storedVersions?.length) {
    const storage = spec.versions?.find((v) => v.storage);
    if (storage) crd.status.storedVersions = [storage.name];
  }
}

/** The storage version joins status.storedVersions on every write (upstream's strategy). */
function addStorageVersion(crd: CRD): void {
  const storage = crd.spec.versions?.find((v) => v.storage);
  if (!storage) return;
  crd.status ??= {};
  const stored = (crd.status.storedVersions ??= []);
  if (!stored.includes(storage.name)) stored.push(storage.name);
}

const statusSubresource: SubresourceType = {
  verbs: ['get', 'patch', 'update'],
  prepareForUpdate(next, old) {
    (next as CRD).spec = (old as CRD).spec;
  },
  validateUpdate: (next) => validateStatusUpdate(next as CRD),
};

export const customResourceDefinitions: ResourceType = {
  group: 'apiextensions.svc.io',
  version: 'v1',
  kind: 'CustomResourceDefinition',
  plural: 'customresourcedefinitions',
  singular: 'customresourcedefinition',
  namespaced: false,
  shortNames: ['crd', 'crds'],
  categories: ['api-extensions'],
  schema: crdSchema,
  defaults,
  prepareForCreate(obj) {
    const crd = obj as CRD;
    crd.status = {};
    addStorageVersion(crd);
  },
  prepareForUpdate(next, old) {
    const crd = next as CRD;
    crd.status = structuredClone((old as CRD).status ?? {});
    addStorageVersion(crd);
  },
  validateCreate: (obj) => validateCreate(obj as CRD, { builtinGroups: groupsOfBuiltins() }),
  validateUpdate: (next, old) => validateUpdate(next as CRD, old as CRD, { builtinGroups: groupsOfBuiltins() }),
  generationOf: (obj) => (obj as CRD).spec,
  subresources: { status: statusSubresource },
  resetFields: { '': ['status'], status: ['spec'] },
  deletion: {
    // the first delete only marks it (no generation bump, as upstream's own delete): the definition
    // controller deletes the objects, then the finalizer goes and the definition with it
    twoPhase: true,
    pending: (obj) => !!obj.metadata.finalizers?.includes(CLEANUP_FINALIZER),
    onDeleteRequested(obj) {
      const crd = obj as CRD;
      const f = (crd.metadata.finalizers ??= []);
      if (!f.includes(CLEANUP_FINALIZER)) f.push(CLEANUP_FINALIZER);
      setCondition(crd, { type: 'Terminating', status: 'True', reason: 'InstanceDeletionPending', message: 'CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon' }, new Date());
    },
    returnsObject: true,
  },
};
