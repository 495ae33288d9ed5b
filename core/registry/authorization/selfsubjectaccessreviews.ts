/**
 * SelfSubjectAccessReview (authorization.svc.io/v1, cluster-scoped, create only): may I do this?
 * Every user may ask (system:basic-user grants it); `kubectl auth can-i` sends one. Virtual: answered
 * by core/authz/reviews.ts for the caller's own identity.
 */
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';
import { accessReviewStatusSchema, nonResourceAttributesSchema, resourceAttributesSchema } from './subjectaccessreviews.js';

export const selfSubjectAccessReviews: ResourceType = {
  group: 'authorization.svc.io',
  version: 'v1',
  kind: 'SelfSubjectAccessReview',
  plural: 'selfsubjectaccessreviews',
  singular: 'selfsubjectaccessreview',
  namespaced: false,
  verbs: ['create'],
  virtual: true,
  protobufPackage: 'svc.io.api.authorization.v1',
  schema: objectSchema('io.svc.api.authorization.v1.SelfSubjectAccessReview', {
    spec: s.struct(
      'io.svc.api.authorization.v1.SelfSubjectAccessReviewSpec',
      { resourceAttributes: resourceAttributesSchema, nonResourceAttributes: nonResourceAttributesSchema },
      { always: true, description: 'The request asked about: exactly one of resourceAttributes and nonResourceAttributes.', typeDescription: 'A request the caller asks about for themself.' },
    ),
    status: accessReviewStatusSchema,
  }, [], 'May I do this? Answered by the authorizers for the caller.'),
};
