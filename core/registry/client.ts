/**
 * RegistryClient: the one way anything in the process runs a registry task. It hands the task to the
 * Executor (pool or inline) and, when the task committed a write, tells the watch cache at once, so
 * the caller's next read sees it (read-your-writes). The HTTP and gRPC endpoints use `run`; controllers
 * use the typed helpers, which speak in objects and throw StatusError, as upstream's controllers use a
 * typed client instead of bytes.
 */
import type { MaybePromise } from '../api/maybe-async.js';
import { StatusError, type Status } from '../api/status.js';
import type { ApiObject, UserInfo } from '../api/types.js';
import type { NamespaceCacheView } from './admission.js';
import { resourceId } from './context.js';
import type { ResourceType } from './resource-type.js';
import type { ApiTask, ApiTaskResult, Executor, TaskVerb } from './task.js';
import { APPLY_PATCH_TYPE } from '../codec/media-types.js';

const APPLY_PATCH_PREFIX = APPLY_PATCH_TYPE.slice(0, APPLY_PATCH_TYPE.indexOf('+'));

/** Who a controller acts as, and under which field manager name its writes are recorded. */
export interface ControllerIdentity {
  user: UserInfo;
  /** User-Agent product, used as the field manager of its updates. */
  userAgent: string;
}

export interface WriteOptions {
  subresource?: string;
  /** Extra query parameters (e.g. `{ propagationPolicy: 'Background' }`, `{ fieldManager: 'x' }`). */
  query?: Record<string, string>;
  /** Content-Type of a patch body. */
  patchType?: string;
}

const JSON_FORM = { mediaType: 'application/json', contentType: 'application/json', pretty: false };

/**
 * Where the tasks of kinds with a write check run (ResourceType.writeCheck): the main thread's own
 * registry, which has the checks, whatever the executor. Their commits are made visible to the
 * listers before the answer is returned, so what the check guards (RBAC) takes effect at once.
 */
export interface MainThreadRoute {
  executor: Executor;
  /** Resource ids (`group/version/plural`) routed here. */
  resources: ReadonlySet<string>;
  /** Other tasks that run here too: those cheaper done than handed to the pool and back (see lightTask). */
  light?: (task: ApiTask) => boolean;
  /** Resolves once the watch cache (and so every lister) holds `revision`. */
  visible(revision: number): MaybePromise<unknown>;
}

/**
 * Bodies up to this size are decoded, validated and stored with less of the main thread's time than
 * the hop to a pool worker and back costs it (bench/profile.js: a ConfigMap CREATE takes 325 µs
 * inline; sent to the pool, 163 µs of the main thread's time plus the worker's 235 µs).
 */
export const LIGHT_BODY_BYTES = 16 * 1024;

/**
 * Whether a task is light: a single-object write of a small body that is not an apply (whose field
 * ownership merge is the heavy work the pool is for). Lists read from the store and collection
 * deletes stay in the pool whatever their size: their cost grows with the data, not the request.
 */
export function lightTask(task: ApiTask): boolean {
  if (task.verb === 'list' || task.verb === 'deletecollection') return false;
  // application/apply-patch+yaml and its CBOR form alike
  if (task.verb === 'patch' && task.contentType.startsWith(APPLY_PATCH_PREFIX)) return false;
  return (task.body?.byteLength ?? 0) <= LIGHT_BODY_BYTES;
}

/** Verbs whose task may create an object, and so passes NamespaceLifecycle. */
const MAY_CREATE: ReadonlySet<TaskVerb> = new Set(['create', 'update', 'patch']);

export class RegistryClient {
  /** Tests of tasks a main-thread-only step must see (admission plugins that handle them). */
  private readonly mainThreadWants: ((task: ApiTask) => boolean)[] = [];

  constructor(
    private readonly executor: Executor,
    /** Told of every committed revision (the watch cache pulls the feed up to it). */
    private readonly onCommitted: (revision: number) => void,
    private readonly mainThread?: MainThreadRoute,
    /** Namespaces as the watch cache holds them, sent with the tasks that may create (see NamespaceCacheView). */
    private readonly namespaces?: NamespaceCacheView,
  ) {}

  /** Runs a task; a committed write is announced before the result is returned. */
  async run(task: ApiTask): Promise<ApiTaskResult> {
    if (this.namespaces && task.namespace && MAY_CREATE.has(task.verb)) {
      const seen = this.namespaces.seen(task.namespace);
      if (seen) task.namespaceSeen = seen;
    }
    const main = this.mainThread;
    if (main?.resources.has(task.resource)) {
      const result = await main.executor.run(task);
      if (result.revision) {
        this.committed(task, result.revision);
        await main.visible(result.revision);
      }
      return result;
    }
    const here = main && (main.light?.(task) || this.mainThreadWants.some((w) => w(task)));
    const result = await (here ? main.executor : this.executor).run(task);
    if (result.revision) this.committed(task, result.revision);
    return result;
  }

  /** Runs the tasks `wants` picks on the main thread's registry (whose context has what the pool lacks). */
  routeToMainThread(wants: (task: ApiTask) => boolean): void {
    this.mainThreadWants.push(wants);
  }

  private committed(task: ApiTask, revision: number): void {
    this.namespaces?.committed(task.resource, revision);
    this.onCommitted(revision);
  }

  /** A client acting as one identity, with object-level helpers. */
  as(identity: ControllerIdentity): TypedClient {
    return new TypedClient(this, identity);
  }
}

/** Object-level calls for controllers: objects in, objects out, StatusError on failure. */
export class TypedClient {
  constructor(
    private readonly registry: RegistryClient,
    private readonly identity: ControllerIdentity,
  ) {}

  private task(verb: TaskVerb, rt: ResourceType, namespace: string, name: string, body: unknown, o: WriteOptions): ApiTask {
    const t: ApiTask = {
      verb,
      resource: resourceId(rt),
      subresource: o.subresource ?? '',
      namespace: rt.namespaced ? namespace : '',
      name,
      query: o.query ? new URLSearchParams(o.query).toString() : '',
      contentType: o.patchType ?? 'application/json',
      form: JSON_FORM,
      user: this.identity.user,
      userAgent: this.identity.userAgent,
    };
    if (body !== undefined) t.body = Buffer.from(JSON.stringify(body));
    if (rt.custom) t.definition = { name: rt.custom.definition, revision: rt.custom.revision };
    return t;
  }

  private async call(t: ApiTask): Promise<ApiObject> {
    const r = await this.registry.run(t);
    const value = JSON.parse(Buffer.from(r.body).toString('utf8')) as ApiObject;
    if (r.code >= 400) throw StatusError.fromStatus(value as unknown as Status);
    return value;
  }

  create(rt: ResourceType, obj: ApiObject, o: WriteOptions = {}): Promise<ApiObject> {
    return this.call(this.task('create', rt, obj.metadata.namespace ?? '', '', obj, o));
  }

  update(rt: ResourceType, obj: ApiObject, o: WriteOptions = {}): Promise<ApiObject> {
    return this.call(this.task('update', rt, obj.metadata.namespace ?? '', obj.metadata.name ?? '', obj, o));
  }

  patch(rt: ResourceType, namespace: string, name: string, patch: unknown, o: WriteOptions = {}): Promise<ApiObject> {
    return this.call(this.task('patch', rt, namespace, name, patch, { patchType: 'application/merge-patch+json', ...o }));
  }

  /**
   * Deletes; the answer is the object (kept by finalizers, or returned by kinds that do) or a Status.
   * `options` is the DeleteOptions body (preconditions, propagationPolicy).
   */
  delete(rt: ResourceType, namespace: string, name: string, o: WriteOptions = {}, options?: Record<string, unknown>): Promise<ApiObject> {
    return this.call(this.task('delete', rt, namespace, name, options, o));
  }
}
