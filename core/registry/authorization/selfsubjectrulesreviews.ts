/**
 * SelfSubjectRulesReview (authorization.svc.io/v1, cluster-scoped, create only): what may I do in this
 * namespace? The rules every authorizer can list for the caller (`kubectl auth can-i --list`);
 * `incomplete` when some authorizer cannot list its rules. Virtual: answered by core/authz/reviews.ts.
 */
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';

const strings = (description: string, always = false) => s.list(s.string(), { listType: 'atomic', description, ...(always ? { always } : {}) });

export const selfSubjectRulesReviews: ResourceType = {
  group: 'authorization.svc.io',
  version: 'v1',
  kind: 'SelfSubjectRulesReview',
  plural: 'selfsubjectrulesreviews',
  singular: 'selfsubjectrulesreview',
  namespaced: false,
  verbs: ['create'],
  virtual: true,
  protobufPackage: 'svc.io.api.authorization.v1',
  schema: objectSchema('io.svc.api.authorization.v1.SelfSubjectRulesReview', {
    spec: s.struct('io.svc.api.authorization.v1.SelfSubjectRulesReviewSpec', { namespace: s.string({ description: 'The namespace to list rules for.' }) }, { always: true, description: 'Which namespace to list rules for.', typeDescription: 'The namespace a rules review is about.' }),
    status: s.struct(
      'io.svc.api.authorization.v1.SubjectRulesReviewStatus',
      {
        resourceRules: s.list(
          s.struct('io.svc.api.authorization.v1.ResourceRule', {
            verbs: strings('Verbs allowed, "*" for all.', true),
            apiGroups: strings('API groups, "*" for all.'),
            resources: strings('Resources, "*" for all, "<resource>/<subresource>" for subresources.'),
            resourceNames: strings('Names the rule is limited to; empty for all.'),
          }, { typeDescription: 'What a user may do to some resources.' }),
          { listType: 'atomic', always: true, description: 'What the user may do to resources.' },
        ),
        nonResourceRules: s.list(
          s.struct('io.svc.api.authorization.v1.NonResourceRule', {
            verbs: strings('Verbs allowed, "*" for all.', true),
            nonResourceURLs: strings('Paths, with a trailing "*" for a prefix.'),
          }, { typeDescription: 'What a user may do to some non-resource paths.' }),
          { listType: 'atomic', always: true, description: 'What the user may do to non-resource paths.' },
        ),
        incomplete: s.boolean({ always: true, description: 'Whether some authorizer could not list its rules, so the lists may be short.' }),
        evaluationError: s.string({ description: 'Why some authorizer could not list its rules.' }),
      },
      { description: 'Filled in by the server.', typeDescription: 'The rules a user has in a namespace, as far as the authorizers can list them.' },
    ),
  }, [], 'What may I do in this namespace? The rules the authorizers can list for the caller.'),
};
