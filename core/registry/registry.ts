/**
 * The generic registry: one entry point that runs a task (create, update, patch, delete,
 * deletecollection, store list) for any declared resource type and returns encoded bytes. The same
 * code runs in pool workers and inline on the main thread.
 */
import type { ApiTask, ApiTaskResult } from './task.js';
import { errors, StatusError } from '../api/status.js';
import { listOptionsFromQuery, validateListOptions } from '../request/list-options.js';
import type { OpRequest, OpResult, RegistryContext } from './context.js';
import { create } from './create.js';
import { deleteCollection, deleteObject } from './delete.js';
import { listOp } from './list.js';
import { encodeError, encodeResult, errorContentType } from './respond.js';
import type { ResourceType } from './resource-type.js';
import { update } from './update.js';
import { recordWarnings } from '../api/warnings.js';
import { patch } from './patch.js';

const EMPTY = new Uint8Array(0);

function withAuditAnnotations(r: ApiTaskResult, req: OpRequest | undefined): ApiTaskResult {
  const a = req?.admissionOut?.annotations;
  if (a && Object.keys(a).length) r.auditAnnotations = a;
  return r;
}

export class Registry {
  constructor(readonly ctx: RegistryContext) {}

  typeOf(resource: string): ResourceType {
    const rt = this.ctx.types.get(resource);
    if (!rt) throw errors.pathNotFound();
    return rt;
  }

  /**
   * The task's type: the registry's, or, for a custom resource whose definition revision the registry
   * does not have (pool workers), the one built from the stored definition.
   */
  async typeFor(task: ApiTask): Promise<ResourceType> {
    const def = task.definition;
    const rt = this.ctx.types.get(task.resource);
    if (!def || (rt?.custom?.definition === def.name && rt.custom.revision >= def.revision)) {
      if (!rt) throw errors.pathNotFound();
      return rt;
    }
    if (!this.ctx.customTypes) throw errors.pathNotFound();
    return this.ctx.customTypes.resolve(def, task.resource);
  }

  /** Runs an operation and returns its result (errors are thrown as StatusError). */
  async op(task: ApiTask, rt?: ResourceType, req?: OpRequest): Promise<OpResult> {
    rt ??= await this.typeFor(task);
    req ??= this.request(task, rt);
    switch (task.verb) {
      case 'create':
        return create(this.ctx, req);
      case 'update':
        return update(this.ctx, req);
      case 'patch':
        return patch(this.ctx, req);
      case 'delete':
        return deleteObject(this.ctx, req);
      case 'deletecollection':
        return deleteCollection(this.ctx, req);
      case 'list': {
        const o = listOptionsFromQuery(req.query);
        validateListOptions(o);
        return listOp(this.ctx, rt, task.namespace, o);
      }
    }
  }

  private request(task: ApiTask, rt: ResourceType): OpRequest {
    const req: OpRequest = {
      rt,
      subresource: task.subresource,
      namespace: task.namespace,
      name: task.name,
      query: new URLSearchParams(task.query),
      body: task.body,
      contentType: task.contentType,
      user: task.user,
      userAgent: task.userAgent,
    };
    if (task.namespaceSeen) req.namespaceSeen = task.namespaceSeen;
    if (task.form.respell) req.requestGroup = task.form.respell.to;
    return req;
  }

  /**
   * Runs a task to completion: an encoded response, success or Status. Once the operation returned,
   * its write may be committed, so nothing after it may turn the answer into a failure: warnings are
   * recorded as upstream does (never an invalid header), and an object that cannot be encoded in the
   * negotiated media type is answered in JSON, which stored bytes always are.
   */
  async run(task: ApiTask): Promise<ApiTaskResult> {
    let r: OpResult;
    let rt: ResourceType;
    let req: OpRequest | undefined;
    try {
      rt = await this.typeFor(task);
      req = this.request(task, rt);
      r = await this.op(task, rt, req);
    } catch (err) {
      const e = encodeError(err, task.form);
      // a Status the operation chose (a webhook that failed closed) is one line; anything else, with its stack
      if (e.code >= 500) console.error(`svc-apiserver: ${task.verb} ${task.resource} failed:`, err instanceof StatusError ? err.message : err);
      const failed: ApiTaskResult = { code: e.code, contentType: errorContentType(task.form), body: e.body, warnings: recordWarnings(req?.admissionOut?.warnings ?? []), headers: e.headers };
      return withAuditAnnotations(failed, req);
    }
    const out: ApiTaskResult = { code: r.code, contentType: task.form.contentType, body: EMPTY, warnings: recordWarnings(req.admissionOut ? [...r.warnings, ...req.admissionOut.warnings] : r.warnings) };
    withAuditAnnotations(out, req);
    if (r.revision) out.revision = r.revision;
    if (r.headers) out.headers = r.headers;
    try {
      out.body = encodeResult(rt, r, task.form);
    } catch (err) {
      console.error(`svc-apiserver: ${task.verb} ${task.resource}: encoding the result as ${task.form.mediaType} failed, answering in JSON:`, err);
      out.contentType = 'application/json';
      try {
        out.body = encodeResult(rt, r, { mediaType: 'application/json', contentType: 'application/json', pretty: false });
      } catch {
        // still the operation's success: a Status saying so
        out.body = Buffer.from(`${JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: r.code })}\n`);
      }
    }
    return out;
  }
}
