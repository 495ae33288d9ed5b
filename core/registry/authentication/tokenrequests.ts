/**
 * TokenRequest (authentication.svc.io/v1): the body and answer of the serviceaccounts/<name>/token
 * subresource, not a resource of its own (no collection, nothing stored). expirationSeconds defaults
 * to one hour; the token is issued by core/authn/token-request.ts.
 */
import type { ApiObject } from '../../api/types.js';
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';

export const DEFAULT_TOKEN_EXPIRATION_SECONDS = 60 * 60;

export const boundObjectReferenceSchema = s.struct(
  'io.svc.api.authentication.v1.BoundObjectReference',
  {
    kind: s.string({ description: 'Kind of the referent: Secret (Pods and Nodes are not served here).' }),
    apiVersion: s.string({ description: 'API version of the referent.' }),
    name: s.string({ description: 'Name of the referent, in the namespace of the ServiceAccount.' }),
    uid: s.string({ description: 'UID of the referent; when given it must be the live object\'s.' }),
  },
  { typeDescription: 'The object a token is bound to: the token is valid only while it exists.' },
);

export const tokenRequests: ResourceType = {
  group: 'authentication.svc.io',
  version: 'v1',
  kind: 'TokenRequest',
  plural: 'token',
  singular: 'tokenrequest',
  namespaced: true,
  verbs: ['create'],
  virtual: true,
  protobufPackage: 'svc.io.api.authentication.v1',
  schema: objectSchema(
    'io.svc.api.authentication.v1.TokenRequest',
    {
      spec: s.struct(
        'io.svc.api.authentication.v1.TokenRequestSpec',
        {
          audiences: s.list(s.string(), { always: true, listType: 'atomic', description: 'Intended audiences of the token; default: the API server\'s.' }),
          expirationSeconds: s.int64({ ptr: true, always: true, description: 'Requested lifetime of the token, at least 600 seconds; default 3600.' }),
          boundObjectRef: s.field(boundObjectReferenceSchema, { ptr: true, always: true, description: 'The object the token is bound to, if any.' }),
        },
        { always: true, description: 'What token is asked for.', typeDescription: 'The audiences, lifetime and binding of a requested token.' },
      ),
      status: s.struct(
        'io.svc.api.authentication.v1.TokenRequestStatus',
        {
          token: s.string({ always: true, description: 'The opaque bearer token.' }),
          expirationTimestamp: s.time({ always: true, description: 'Time of expiration of the returned token.' }),
        },
        { description: 'Filled in by the server with the token.', typeDescription: 'An issued token and when it expires.' },
      ),
    },
    ['spec'],
    'A request for a service account token, answered with the token.',
  ),
  defaults(obj: ApiObject) {
    const spec = ((obj as { spec?: Record<string, unknown> }).spec ??= {});
    if (spec.expirationSeconds === undefined || spec.expirationSeconds === null) spec.expirationSeconds = DEFAULT_TOKEN_EXPIRATION_SECONDS;
  },
};
