/**
 * What a feature plugs into the request path besides stages: a handler of a virtual resource (a
 * review, a token request) and a route of a non-resource path. Declared here, below the server's
 * endpoints, so the features that provide them (authentication, authorization) need nothing from
 * core/server.
 */
import type { MaybePromise } from '../api/maybe-async.js';
import type { ApiObject } from '../api/types.js';
import type { ResourceType, Verb } from '../registry/resource-type.js';
import type { RequestScope } from './scope.js';

/** A resource request after routing and negotiation. */
export interface ResolvedRequest {
  verb: Verb;
  rt: ResourceType;
  namespace: string;
  name: string;
  subresource: string;
}

/** Computes the answer of a review: the request object with its status filled in. */
export type VirtualHandler = (review: ApiObject, s: RequestScope, r: ResolvedRequest) => MaybePromise<ApiObject>;

/** Answers one non-resource path. */
export type NonResourceRoute = (s: RequestScope) => MaybePromise<void>;
