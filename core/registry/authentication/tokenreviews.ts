/**
 * TokenReview (authentication.svc.io/v1, cluster-scoped, create only): a virtual resource that
 * authenticates spec.token with this server's own authenticators, for the audiences asked
 * (spec.audiences, default --api-audiences), and answers in status. Nothing is stored; the answer is
 * computed by core/authn/reviews.ts.
 */
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';
import { userInfoSchema } from './selfsubjectreviews.js';

export const tokenReviews: ResourceType = {
  group: 'authentication.svc.io',
  version: 'v1',
  kind: 'TokenReview',
  plural: 'tokenreviews',
  singular: 'tokenreview',
  namespaced: false,
  verbs: ['create'],
  virtual: true,
  protobufPackage: 'svc.io.api.authentication.v1',
  schema: objectSchema(
    'io.svc.api.authentication.v1.TokenReview',
    {
      spec: s.struct('io.svc.api.authentication.v1.TokenReviewSpec', {
        token: s.string({ description: 'Token is the opaque bearer token.' }),
        audiences: s.list(s.string(), { listType: 'atomic', description: 'Audiences the resource server presenting the token identifies as.' }),
      }),
      status: s.struct('io.svc.api.authentication.v1.TokenReviewStatus', {
        authenticated: s.boolean({ description: 'Whether the token can be associated with a known user.' }),
        user: userInfoSchema,
        audiences: s.list(s.string(), { listType: 'atomic', description: 'The audiences the token is valid for, of those asked.' }),
        error: s.string({ description: 'Why the token could not be checked.' }),
      }),
    },
    ['spec'],
  ),
};
