/**
 * What every registry operation receives and returns. Operations are pure request -> result over a
 * Store: they run on a worker thread or inline on the main thread, and the result crosses the thread
 * boundary as plain data (encoded by core/registry/respond.ts).
 */
import type { MaybePromise } from '../api/maybe-async.js';
import type { Status } from '../api/status.js';
import type { BodyFormats } from '../codec/serializer.js';
import type { ApiObject, UserInfo } from '../api/types.js';
import type { Store } from '../storage/interface.js';
import type { ResourceType } from './resource-type.js';
import type { TypeRegistry } from './type-registry.js';
import type { CustomTypeResolver } from '../apiextensions/resolver.js';
import type { NamespaceSeen } from './admission.js';
import type { Admission } from '../admission/attributes.js';

export interface RegistryContext {
  store: Store;
  /** The served resource types (by `group/version/plural`; core group: `/v1/plural`), observable. */
  types: TypeRegistry;
  /** Current time, injectable for tests. */
  now(): Date;
  /** Feature gates as parsed from --feature-gates. */
  featureGates: ReadonlyMap<string, boolean>;
  /**
   * Checks named by ResourceType.writeCheck, registered on the main thread only (workers have none,
   * and refuse writes of kinds that need one).
   */
  writeChecks: Map<string, WriteCheck>;
  /** Request body formats served beyond JSON, YAML and protobuf (CBOR under its gate). */
  bodyFormats: BodyFormats;
  /** Builds custom resource types the type registry does not hold (in pool workers) from their stored definitions. */
  customTypes?: CustomTypeResolver;
  /**
   * The admission chain (webhooks, policies, quota): the main thread's registry only, where its
   * listers live; RegistryClient sends every write it handles there (core/registry/admit.ts).
   */
  admission?: Admission;
  /** The built-in steps every registry runs itself, as --enable/--disable-admission-plugins left them. */
  inlineAdmission: InlineAdmission;
}

/** Admission plugins simple enough to run in every registry, pool workers included. */
export interface InlineAdmission {
  namespaceLifecycle: boolean;
  nodeRestriction: boolean;
}

/** One create or update as a write check sees it: the final object (validated), and the stored one on update. */
export interface CheckedWrite {
  rt: ResourceType;
  verb: 'create' | 'update';
  user: UserInfo;
  /** Namespace and name from the request path (the name is empty on POST). */
  namespace: string;
  name: string;
  object: ApiObject;
  old?: ApiObject;
}

/** Refuses a write by throwing a StatusError (e.g. 403). */
export type WriteCheck = (w: CheckedWrite) => MaybePromise<void>;

export interface OpRequest {
  rt: ResourceType;
  subresource: string;
  namespace: string;
  name: string;
  query: URLSearchParams;
  body: Uint8Array | undefined;
  contentType: string;
  user: UserInfo;
  userAgent: string;
  /** The namespace as the main thread's watch cache holds it, when it was sent with the task. */
  namespaceSeen?: NamespaceSeen;
  /** The group as the request path spelled it, when it differs from the canonical one (an upstream alias). */
  requestGroup?: string;
  /** What admission said beside its verdict: warnings and audit annotations (see Registry.run). */
  admissionOut?: { warnings: string[]; annotations: Record<string, string> };
}

/** An object to return, as stored bytes (+ revision to stamp) or as a value. */
export type ResultBody =
  | { stored: Uint8Array; revision: number | undefined }
  | { value: ApiObject | Status | Record<string, unknown> }
  | { list: { items: Buffer[]; resourceVersion: string; continue?: string; remainingItemCount?: number } };

export interface OpResult {
  code: number;
  body: ResultBody;
  warnings: string[];
  /** Revision written, when the operation committed something. */
  revision?: number;
  headers?: Record<string, string>;
}

export const resourceId = (rt: Pick<ResourceType, 'group' | 'version' | 'plural'>): string => `${rt.group}/${rt.version}/${rt.plural}`;
