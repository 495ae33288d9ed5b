/**
 * SubjectAccessReview (authorization.svc.io/v1, cluster-scoped, create only): may this user (any
 * user, named in the spec) do this? Used by components that delegate authorization to the API server.
 * Virtual: nothing is stored; core/authz/reviews.ts asks the authorizer chain and fills in status.
 * The schema pieces shared by the four access reviews live here.
 */
import { objectSchema } from '../../schema/meta.js';
import { s } from '../../schema/schema.js';
import type { ResourceType } from '../resource-type.js';

const selectorRequirement = (name: string, what: string) =>
  s.struct(
    name,
    {
      key: s.string({ always: true, description: `The ${what} the requirement applies to.` }),
      operator: s.string({ always: true, description: 'In, NotIn, Exists or DoesNotExist.' }),
      values: s.list(s.string(), { listType: 'atomic', description: 'Values to compare against, by the operator.' }),
    },
    { typeDescription: `One requirement of a ${what} selector: a key, an operator and the values it compares with.` },
  );

const selectorAttributes = (name: string, requirement: string, what: string) =>
  s.struct(
    name,
    {
      rawSelector: s.string({ description: 'The selector as a query parameter spells it; not with requirements.' }),
      requirements: s.list(selectorRequirement(requirement, what), { listType: 'atomic', description: 'The parsed requirements of the selector; not with rawSelector.' }),
    },
    { ptr: true, description: `The ${what} selector of a list, watch or deletecollection asked about.`, typeDescription: `A ${what} selector, raw or as requirements.` },
  );

export const resourceAttributesSchema = s.struct(
  'io.svc.api.authorization.v1.ResourceAttributes',
  {
    namespace: s.string({ description: 'Namespace of the action ("" for cluster-scoped resources, or all namespaces for namespaced ones).' }),
    verb: s.string({ description: 'A resource verb: get, list, watch, create, update, patch, delete, deletecollection, or any other, "*" for all.' }),
    group: s.string({ description: 'API group of the resource, "*" for all.' }),
    version: s.string({ description: 'API version of the resource, "*" for all.' }),
    resource: s.string({ description: 'The resource, "*" for all.' }),
    subresource: s.string({ description: 'The subresource, "" for none.' }),
    name: s.string({ description: 'Name of the resource acted on, "" for all.' }),
    fieldSelector: selectorAttributes('io.svc.api.authorization.v1.FieldSelectorAttributes', 'io.svc.api.meta.v1.FieldSelectorRequirement', 'field'),
    labelSelector: selectorAttributes('io.svc.api.authorization.v1.LabelSelectorAttributes', 'io.svc.api.meta.v1.LabelSelectorRequirement', 'label'),
  },
  { ptr: true, description: 'The resource request asked about.', typeDescription: 'A request on a resource, as the authorizers see it.' },
);

export const nonResourceAttributesSchema = s.struct(
  'io.svc.api.authorization.v1.NonResourceAttributes',
  {
    path: s.string({ description: 'The URL path of the request.' }),
    verb: s.string({ description: 'The lower-case HTTP method.' }),
  },
  { ptr: true, description: 'The non-resource request asked about.', typeDescription: 'A request on a path outside the resource API, as the authorizers see it.' },
);

export const accessReviewStatusSchema = s.struct(
  'io.svc.api.authorization.v1.SubjectAccessReviewStatus',
  {
    allowed: s.boolean({ always: true, description: 'Whether the action is allowed.' }),
    denied: s.boolean({ description: 'Whether an authorizer denied the action outright (allowed is then false too).' }),
    reason: s.string({ description: 'Why, as the deciding authorizer says.' }),
    evaluationError: s.string({ description: 'Why the authorizers could not evaluate the request; they may still have decided.' }),
  },
  { description: 'Filled in by the server.', typeDescription: 'The decision of the authorizers.' },
);

export const subjectAccessReviewSpecFields = {
  resourceAttributes: resourceAttributesSchema,
  nonResourceAttributes: nonResourceAttributesSchema,
  user: s.string({ description: 'The user asked about.' }),
  groups: s.list(s.string(), { listType: 'atomic', description: 'The groups asked about.' }),
  extra: s.map(s.list(s.string(), { listType: 'atomic' }), { description: 'Extra attributes of the user, as an authenticator would give them.' }),
  uid: s.string({ description: 'The UID of the user asked about.' }),
};

export const subjectAccessReviewSpecSchema = (description: string) =>
  s.struct('io.svc.api.authorization.v1.SubjectAccessReviewSpec', subjectAccessReviewSpecFields, {
    always: true,
    description,
    typeDescription: 'A request and the user it is asked for: exactly one of resourceAttributes and nonResourceAttributes, and a user or groups.',
  });

export const subjectAccessReviews: ResourceType = {
  group: 'authorization.svc.io',
  version: 'v1',
  kind: 'SubjectAccessReview',
  plural: 'subjectaccessreviews',
  singular: 'subjectaccessreview',
  namespaced: false,
  verbs: ['create'],
  virtual: true,
  protobufPackage: 'svc.io.api.authorization.v1',
  schema: objectSchema('io.svc.api.authorization.v1.SubjectAccessReview', {
    spec: subjectAccessReviewSpecSchema('The request asked about: exactly one of resourceAttributes and nonResourceAttributes, and the user.'),
    status: accessReviewStatusSchema,
  }, [], 'May this user do this? Answered by the authorizers, for components that delegate authorization to the API server.'),
};
