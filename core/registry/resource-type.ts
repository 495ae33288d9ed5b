/**
 * A resource type is declared once, as data plus small pure hooks. Discovery, routing, the generic
 * registry, codecs, field selectors, OpenAPI and (later) Tables and RBAC defaults all read this one
 * declaration: adding a kind is adding one file under core/registry/<group>/ and listing it in
 * core/registry/catalog.ts.
 *
 * Hook order on create (upstream's RESTCreateStrategy): decode -> defaults -> prepareForCreate ->
 * generic ObjectMeta validation -> validateCreate -> canonicalize -> store.
 * On update: decode -> defaults -> prepareForUpdate(new, old) -> validation (generic ObjectMeta update
 * rules, then validateUpdate) -> store.
 */
import type { FieldError } from '../api/field-errors.js';
import type { NameValidator } from '../api/validation.js';
import type { ApiObject, UserInfo } from '../api/types.js';
import type { StructSchema } from '../schema/schema.js';

export type Verb = 'create' | 'delete' | 'deletecollection' | 'get' | 'list' | 'patch' | 'update' | 'watch';

export const allVerbs: readonly Verb[] = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** How metadata.name (and generateName, as a prefix) is validated. */
export type NameRule = 'dns1123-subdomain' | 'dns1123-label' | 'path-segment';

export interface TableColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  format?: string;
  description: string;
  priority?: number;
  cell: (obj: ApiObject) => unknown;
}

/**
 * A subresource. Stored ones (`status`, `finalize`) say which part of the object a write through them
 * may change. A virtual one (`serviceaccounts/token`, upstream's NamedCreater) takes a create of
 * another kind (`kind`, e.g. TokenRequest), answered on the main thread by the handler registered for
 * `<group>/<version>/<plural>/<subresource>`; nothing is stored and the parent is only read.
 */
export interface SubresourceType {
  verbs: readonly Verb[];
  /**
   * Builds the object to store from the live object and the object sent to the subresource:
   * e.g. status copies only `.status` from the request, finalize only `.spec.finalizers`.
   */
  prepareForUpdate?(next: ApiObject, old: ApiObject): void;
  validateUpdate?(next: ApiObject, old: ApiObject): FieldError[];
  /** For a virtual subresource: the kind posted to it and answered (its verbs are ['create']). */
  kind?: ResourceType;
  /**
   * A subresource served as another kind (a custom resource's scale: autoscaling/v1 Scale): reads
   * answer with the view of the object; writes send a view, which `fromView` applies to the object.
   */
  view?: SubresourceView;
}

export interface SubresourceView {
  group: string;
  version: string;
  kind: string;
  schema: StructSchema;
  toView(obj: ApiObject): ApiObject;
  /** The object after the sent view is applied to it (the live object is not changed). */
  fromView(view: ApiObject, obj: ApiObject): ApiObject;
}

export interface ResourceType {
  /** API group; '' for the core group served at /api/v1. */
  group: string;
  version: string;
  kind: string;
  /** URL segment (lower-case plural). */
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames?: readonly string[];
  categories?: readonly string[];
  /** Verbs on the main resource; defaults to allVerbs. */
  verbs?: readonly Verb[];
  /**
   * Protobuf package of the kind's messages (`<package>.<Kind>` and, unless virtual, `<Kind>List`,
   * in proto/); absent: the kind has no protobuf form (custom resources), and protobuf is refused.
   */
  protobufPackage?: string;
  /** Full object schema: TypeMeta, ObjectMeta and the kind's own fields, with merge markers. */
  schema: StructSchema;
  /** Name rule for metadata.name (a named rule or the kind's own validator); default dns1123-subdomain. */
  nameRule?: NameRule | NameValidator;

  /** Fills unset fields with defaults (upstream's defaulting, applied on every decode of a write). */
  defaults?(obj: ApiObject): void;
  /**
   * Clears or sets server-owned fields on create (status reset, generation = 1, ...); `user` is who
   * asked (upstream's strategies read it from the request context: CSRs record their requester).
   */
  prepareForCreate?(obj: ApiObject, user?: UserInfo): void;
  /** Carries server-owned fields over from the stored object on update (status, spec.finalizers, ...). */
  prepareForUpdate?(next: ApiObject, old: ApiObject): void;
  /** Kind-specific validation on create; the generic ObjectMeta rules run before it. */
  validateCreate?(obj: ApiObject): FieldError[];
  /** Kind-specific validation on update (immutable fields, transitions); ObjectMeta update rules run before it. */
  validateUpdate?(next: ApiObject, old: ApiObject): FieldError[];
  /** Warnings returned to the client in `Warning` headers (e.g. deprecated field values). */
  warnings?(obj: ApiObject, old?: ApiObject): string[];
  /**
   * Which part of the object is the "spec" for metadata.generation: generation is set to 1 on create
   * and bumped when this part changes. Absent: the kind does not track generation.
   */
  generationOf?(obj: ApiObject): unknown;

  /**
   * Field-selector labels beyond metadata.name and metadata.namespace (which every kind has), as
   * upstream's GetAttrs: e.g. `{ 'status.phase': obj => obj.status?.phase }`.
   */
  selectableFields?: Readonly<Record<string, (obj: ApiObject) => string | undefined>>;

  /** Columns for Table output; default Name and Created At. */
  tableColumns?: readonly TableColumn[];

  subresources?: Readonly<Record<string, SubresourceType>>;

  /**
   * Deletion: extra reasons an object must stay (Terminating) after a delete request beyond
   * metadata.finalizers (namespaces: spec.finalizers), and the change a first delete request makes
   * (namespaces: status.phase = Terminating).
   */
  deletion?: {
    pending?(obj: ApiObject): boolean;
    onDeleteRequested?(obj: ApiObject): void;
    /**
     * An object removed at once is answered with its last state (true: upstream's
     * ReturnDeletedObject) or a Success Status naming it (false, the default). An object that stays
     * (finalizers, pending work) is always answered with the object.
     */
    returnsObject?: boolean;
    /**
     * The message of a delete precondition that does not hold, for kinds whose upstream delete words
     * it itself (the conflict is then on the plural resource); absent: the generic store's wording.
     */
    preconditionMessage?(field: 'UID' | 'ResourceVersion', inPrecondition: string, inObject: string): string;
    /** Deleting one of these names is forbidden (namespaces: default, svc-system, svc-public). */
    protectedNames?: readonly string[];
    /**
     * The first delete request only marks the object Terminating, even with nothing pending; a
     * controller finishes the work and deletes it again (namespaces).
     */
    twoPhase?: boolean;
    /**
     * What a delete without a propagation policy does to dependents (upstream's
     * DefaultGarbageCollectionPolicy): DeleteDependents (the default: Background), OrphanDependents
     * (adds the `orphan` finalizer), Unsupported (propagation options ignored, no GC finalizers kept:
     * core/v1 Events).
     */
    garbageCollection?: 'DeleteDependents' | 'OrphanDependents' | 'Unsupported';
  };

  /**
   * Fields a write through an endpoint ('' for the main resource, or a subresource name) never
   * changes and so never owns (upstream's reset fields): e.g. status on the main resource; a dotted
   * name is a nested field (`status.conditions`).
   */
  resetFields?: Readonly<Record<string, readonly string[]>>;

  /** PUT on a missing object creates it (upstream's AllowCreateOnUpdate; e.g. events, leases). */
  allowCreateOnUpdate?: boolean;
  /**
   * Whether PUT may omit metadata.resourceVersion (upstream's AllowUnconditionalUpdate, default true);
   * when false an update without it is 422 `must be specified for an update`.
   */
  unconditionalUpdate?: boolean;

  /**
   * Names a check every create and update of this kind (POST, PUT, PATCH, apply, dry runs included)
   * must pass with the final object, after validation and before the store (RBAC: escalation
   * prevention). Such checks need main-thread state (authorizer, listers), so they are registered
   * on the main thread's registry and the kind's tasks run there (RegistryClient routes them); a
   * registry without the check refuses the write.
   */
  writeCheck?: string;

  /** Whether a namespaced kind's create must be admitted by namespace lifecycle (default true). */
  skipNamespaceLifecycle?: boolean;

  /**
   * A virtual resource (upstream's rest.Creater without storage: reviews): nothing is stored or
   * watched; a create is answered by a handler registered for the type on the main thread, where the
   * authenticator and authorizer live (core/server/endpoints/virtual.ts). Its verbs are ['create'].
   */
  virtual?: boolean;

  /** Every request to this version gets this Warning header (a deprecated version). */
  deprecationWarning?: string;
  /** The release that stops serving this deprecated version (`1.35`), for the warning and apiserver_requested_deprecated_apis. */
  removedRelease?: string;

  /** Set for the kinds of custom resource definitions: storage version, conversion, the definition's revision. */
  custom?: CustomResourceStorage;
}

/**
 * How the objects of a custom resource definition's version are stored: in the definition's storage
 * version, their apiVersion kept in the stored bytes, converted to the served version on every read and
 * back on every write (core/apiextensions/conversion.ts). Tasks carry the definition's name and revision,
 * so a pool worker builds the same type from the stored definition when it lacks that revision.
 */
export interface CustomResourceStorage {
  /** The definition's name, and the store revision of the definition the type was built from. */
  definition: string;
  revision: number;
  /** apiVersion objects are written in. */
  storageApiVersion: string;
  /** Conversion calls a webhook (reads must convert before they encode). */
  webhook: boolean;
  /** Objects as stored (any version) as this version, defaulted; in one batch. */
  fromStorage(objs: ApiObject[]): Promise<ApiObject[]>;
  /** The same, when no webhook is needed for this object (same version, or strategy None); undefined otherwise. */
  fromStorageSync(obj: ApiObject): ApiObject | undefined;
  /** An object of this version in the storage version (apiVersion set). */
  toStorage(obj: ApiObject): Promise<ApiObject>;
}

export const apiVersionOf = (rt: Pick<ResourceType, 'group' | 'version'>): string => (rt.group ? `${rt.group}/${rt.version}` : rt.version);
export const groupResourceOf = (rt: ResourceType): { group: string; resource: string } => ({ group: rt.group, resource: rt.plural });
export const groupKindOf = (rt: ResourceType): { group: string; kind: string } => ({ group: rt.group, kind: rt.kind });
