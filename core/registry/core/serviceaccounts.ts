/**
 * ServiceAccount (core/v1, namespaced): references to Secrets (a map keyed by name; only the name is
 * kept, as upstream's strategy strips the rest), image pull secrets (atomic), and whether pods mount a
 * token by default. Using the svc.io/enforce-mountable-secrets annotation draws upstream's 1.32
 * deprecation warning. The `token` subresource takes a TokenRequest and answers with a signed token.
 */
import type { FieldError } from '../../api/field-errors.js';
import { metadataAgeColumn, metadataNameColumn, validateBuiltinFinalizerNames } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { localObjectReferenceSchema, objectReferenceSchema, objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import { tokenRequests } from '../authentication/tokenrequests.js';
import type { ResourceType } from '../resource-type.js';

export const ENFORCE_MOUNTABLE_SECRETS_ANNOTATION = 'svc.io/enforce-mountable-secrets';

interface ServiceAccount extends ApiObject {
  secrets?: { name?: string }[];
  imagePullSecrets?: { name?: string }[];
  automountServiceAccountToken?: boolean;
}

export const serviceAccountSchema = objectSchema(
  'io.svc.api.core.v1.ServiceAccount',
  {
    secrets: s.list(objectReferenceSchema, {
      patchStrategy: 'merge',
      patchMergeKey: 'name',
      listType: 'map',
      listMapKeys: ['name'],
      description: 'Secrets in the same namespace that pods running as this account may use; only the names are kept.',
    }),
    imagePullSecrets: s.list(localObjectReferenceSchema, {
      listType: 'atomic',
      description: 'Secrets in the same namespace with image registry credentials, given to the pods that use this account.',
    }),
    automountServiceAccountToken: s.boolean({
      ptr: true,
      description: 'Whether pods running as this account get an API token mounted unless they say otherwise.',
    }),
  },
  [],
  'An identity for processes that run in pods, and the credentials they may use.',
);

/** Secret references keep only their name. */
function cleanSecretReferences(obj: ApiObject): void {
  const sa = obj as ServiceAccount;
  if (sa.secrets) sa.secrets = sa.secrets.map((ref) => (ref.name ? { name: ref.name } : {}));
}

const validate = (obj: ApiObject): FieldError[] => validateBuiltinFinalizerNames(obj.metadata);

function warnings(obj: ApiObject): string[] {
  const annotations = obj.metadata.annotations;
  if (!annotations || !Object.hasOwn(annotations, ENFORCE_MOUNTABLE_SECRETS_ANNOTATION)) return [];
  return [
    `metadata.annotations[${ENFORCE_MOUNTABLE_SECRETS_ANNOTATION}]: deprecated in v1.32+; prefer separate namespaces to isolate access to mounted secrets`,
  ];
}

export const serviceAccounts: ResourceType = {
  group: '',
  version: 'v1',
  kind: 'ServiceAccount',
  plural: 'serviceaccounts',
  singular: 'serviceaccount',
  namespaced: true,
  shortNames: ['sa'],
  protobufPackage: 'svc.io.api.core.v1',
  schema: serviceAccountSchema,
  prepareForCreate: cleanSecretReferences,
  prepareForUpdate: (next) => cleanSecretReferences(next),
  validateCreate: validate,
  validateUpdate: (next) => validate(next),
  warnings,
  // upstream's storage answers a delete with the removed ServiceAccount
  deletion: { returnsObject: true },
  // TokenRequest: a token for the account, issued by core/authn/token-request.ts
  subresources: { token: { verbs: ['create'], kind: tokenRequests } },
  tableColumns: [
    metadataNameColumn,
    { name: 'Secrets', type: 'string', description: 'Number of secrets referenced.', cell: (obj) => (obj as ServiceAccount).secrets?.length ?? 0 },
    metadataAgeColumn,
  ],
};
