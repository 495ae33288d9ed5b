/**
 * LocalSubjectAccessReview (authorization.svc.io/v1, namespaced, create only): a SubjectAccessReview
 * about one namespace, which a namespace admin may be allowed to ask; the resource attributes'
 * namespace must be the review's own. Virtual: answered by core/authz/reviews.ts.
 */
import { objectSchema } from '../../schema/meta.js';
import type { ResourceType } from '../resource-type.js';
import { accessReviewStatusSchema, subjectAccessReviewSpecSchema } from './subjectaccessreviews.js';

export const localSubjectAccessReviews: ResourceType = {
  group: 'authorization.svc.io',
  version: 'v1',
  kind: 'LocalSubjectAccessReview',
  plural: 'localsubjectaccessreviews',
  singular: 'localsubjectaccessreview',
  namespaced: true,
  verbs: ['create'],
  virtual: true,
  protobufPackage: 'svc.io.api.authorization.v1',
  schema: objectSchema('io.svc.api.authorization.v1.LocalSubjectAccessReview', {
    spec: subjectAccessReviewSpecSchema('The request asked about: resourceAttributes in this namespace (nonResourceAttributes are not allowed), and the user.'),
    status: accessReviewStatusSchema,
  }, [], 'May this user do this in this namespace? Answered by the authorizers.'),
};
