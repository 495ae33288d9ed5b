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
      spec: s.struct(
        'io.svc.api.authentication.v1.TokenReviewSpec',
        {
          token: s.string({ description: 'The opaque bearer token to check.' }),
          audiences: s.list(s.string(), { listType: 'atomic', description: 'Audiences the resource server presenting the token identifies as; default: the API server\'s.' }),
        },
        { description: 'The token to check.', typeDescription: 'A token and the audiences it must be for.' },
      ),
      status: s.struct(
        'io.svc.api.authentication.v1.TokenReviewStatus',
        {
          authenticated: s.boolean({ description: 'Whether the token belongs to a known user.' }),
          user: s.field(userInfoSchema, { description: 'The user the token belongs to.' }),
          audiences: s.list(s.string(), { listType: 'atomic', description: 'The audiences asked for that the token is valid for.' }),
          error: s.string({ description: 'Why the token could not be checked or was refused.' }),
        },
        { description: 'Filled in by the server with the verdict.', typeDescription: 'The verdict on a token.' },
      ),
    },
    ['spec'],
    'A check of a bearer token by the API server\'s own authenticators.',
  ),
};
