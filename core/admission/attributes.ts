/**
 * Admission's vocabulary (upstream's admission.Attributes and admission.Interface): what one write is
 * to the plugins that may change it (mutating: `admit`) and refuse it (validating: `validate`). The
 * registry builds the attributes at the points upstream's handlers and generic store call admission:
 *
 *   create   decode -> defaults -> field ownership -> admit -> BeforeCreate (validation) -> validate -> store
 *   update   read live -> patch or body -> ownership -> admit -> BeforeUpdate -> validate -> store (CAS)
 *   delete   admit (no objects) -> read live -> preconditions -> validate (oldObject = live) -> store
 *
 * A plugin refuses by throwing a StatusError; a mutating plugin replaces `object` (or changes it in
 * place) and the registry validates the result again.
 */
import type { MaybePromise } from '../api/maybe-async.js';
import type { ApiObject, UserInfo } from '../api/types.js';
import type { ResourceType } from '../registry/resource-type.js';
import type { ReinvocationContext } from './reinvocation.js';

export type AdmitPhase = 'early' | 'late';

export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface AdmissionAttributes {
  operation: AdmissionOperation;
  rt: ResourceType;
  /** '' for the main resource. */
  subresource: string;
  namespace: string;
  /** The object's name ('' on a create by generateName until BeforeCreate picks one). */
  name: string;
  /** The object being written: absent on delete. Mutating plugins may replace it. */
  object: ApiObject | undefined;
  /** The stored object: on update and delete. */
  oldObject: ApiObject | undefined;
  /** Revision of the stored object (its resourceVersion, which the registry strips while it works). */
  oldRevision?: number;
  dryRun: boolean;
  /** CreateOptions, UpdateOptions or DeleteOptions as the operation's request carried them. */
  options: Record<string, unknown>;
  user: UserInfo;
  /** The group as the request spelled it (an upstream alias such as storage.k8s.io), for requestKind. */
  requestGroup: string;
  /**
   * The kind of `object` when it is not the resource's (a subresource's own kind: TokenRequest through
   * serviceaccounts/<name>/token), as upstream's attributes name it.
   */
  kind?: { group: string; version: string; kind: string };
  /** Warnings for the client (`Warning` headers). */
  warnings: string[];
  /** Annotations for the request's audit event (`<plugin-prefix>/<key>`). */
  auditAnnotations: Record<string, string>;
  /**
   * `object`'s JSON as the registry encoded it for the store (no TypeMeta, no resourceVersion), when
   * it did so before validating admission (a create): a webhook's review splices these bytes in
   * instead of encoding the object again. Valid while `object` is that same object.
   */
  objectJson?: { object: ApiObject; json: Buffer };
  /** The mutating chain's second-pass state (made by the plugins that may ask for one). */
  reinvocation?: ReinvocationContext;
}

export interface AdmissionPlugin {
  /** Upstream's plugin name (NamespaceLifecycle, MutatingAdmissionWebhook, ...). */
  readonly name: string;
  /**
   * Whether the plugin may act on this operation of this resource now: cheap, asked for every write;
   * a write nothing handles never leaves the pool for the main thread.
   */
  handles(operation: AdmissionOperation, rt: ResourceType, subresource: string): boolean;
  admit?(a: AdmissionAttributes): MaybePromise<void>;
  validate?(a: AdmissionAttributes): MaybePromise<void>;
}

/** The admission chain as the registry sees it (core/admission/chain.ts). */
export interface Admission {
  handles(operation: AdmissionOperation, rt: ResourceType, subresource: string): boolean;
  /**
   * Mutating plugins in order (they may replace `a.object`). `phase` splits them around
   * NamespaceLifecycle, which every registry runs itself: 'early' runs those upstream orders before it
   * (NamespaceAutoProvision), 'late' the others; both when absent.
   */
  admit(a: AdmissionAttributes, phase?: AdmitPhase): MaybePromise<void>;
  validate(a: AdmissionAttributes): MaybePromise<void>;
}
