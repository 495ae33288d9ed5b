/**
 * SelfSubjectReview (authentication.svc.io/v1, cluster-scoped, create only): a virtual resource that
 * answers with the caller's own identity in status.userInfo, for every authenticated user (granted
 * by system:basic-user). Nothing is stored; the answer is computed by core/authn/reviews.ts.
 */
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';

export const userInfoSchema = s.struct('io.svc.api.authentication.v1.UserInfo', {
  username: s.string({ description: 'The name that uniquely identifies this user among all active users.' }),
  uid: s.string({ description: 'A unique value that identifies this user across time.' }),
  groups: s.list(s.string(), { listType: 'atomic', description: 'The names of groups this user is a part of.' }),
  extra: s.map(s.list(s.string(), { listType: 'atomic' }), { description: 'Any additional information provided by the authenticator.' }),
}, { typeDescription: 'The attributes of an authenticated user.' });

export const selfSubjectReviews: ResourceType = {
  group: 'authentication.svc.io',
  version: 'v1',
  kind: 'SelfSubjectReview',
  plural: 'selfsubjectreviews',
  singular: 'selfsubjectreview',
  namespaced: false,
  verbs: ['create'],
  virtual: true,
  protobufPackage: 'svc.io.api.authentication.v1',
  schema: objectSchema(
    'io.svc.api.authentication.v1.SelfSubjectReview',
    {
      status: s.struct(
        'io.svc.api.authentication.v1.SelfSubjectReviewStatus',
        { userInfo: s.field(userInfoSchema, { description: 'The user attributes of the caller.' }) },
        { description: 'Filled in by the server with the user attributes.', typeDescription: 'What the server knows of the caller.' },
      ),
    },
    [],
    'The identity the server sees for the caller: a create answers with the request\'s user attributes.',
  ),
};
