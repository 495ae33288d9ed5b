/**
 * The MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins, as upstream's dispatchers:
 *
 *   which hooks   rules (operation, group in either spelling under matchPolicy Equivalent, version,
 *                 resource/subresource, scope), then namespaceSelector (the namespace's labels; a
 *                 Namespace's own), objectSelector (object or old object), then match conditions
 *                 (an error: the failure policy decides, Fail is 403)
 *   dry run       a webhook with side effects is never sent a dry run: the request fails (400)
 *   call          an AdmissionReview in the first version the webhook accepts (v1, v1beta1), over the
 *                 one webhook client (keep-alive, CA bundle, credentials from the AdmissionConfiguration),
 *                 `?timeout=<n>s`, within timeoutSeconds
 *   answer        allowed, or the webhook's Status with `admission webhook "<name>" denied the request`;
 *                 a failed call or an invalid answer is `failed calling webhook "<name>": ...`, which
 *                 failurePolicy Ignore lets through and Fail turns into a 500
 *   mutating      one after another, each JSON Patch applied to the object the next one sees; a hook
 *                 with reinvocationPolicy IfNeeded is called again in the chain's second pass when a
 *                 later hook or plugin changed the object (../reinvocation.ts); audit annotations mutation.webhook.admission.svc.io/round_<r>_index_<i> and
 *                 patch.webhook.admission.svc.io/round_<r>_index_<i>
 *   validating    all matching hooks at once; the first refusal (in hook order) is the answer
 *
 * Warnings go to the client, a webhook's auditAnnotations to the event as `<webhook name>/<key>`.
 */
import { randomUUID } from 'node:crypto';
import { errors, type Status, StatusError } from '../../api/status.js';
import type { ApiObject } from '../../api/types.js';
import { celValue } from '../../cel/value.js';
import { applyJsonPatch } from '../../merge/json-patch.js';
import { namespaces } from '../../registry/core/namespaces.js';
import { objectKey } from '../../registry/keys.js';
import { groupResourceOf, type ResourceType } from '../../registry/resource-type.js';
import { parseStored } from '../../codec/object-bytes.js';
import { targetOfClientConfig, WebhookClient, WebhookError, WebhookTimeoutError } from '../../webhook/client.js';
import type { AdmissionAttributes, AdmissionPlugin } from '../attributes.js';
import type { PluginDeps } from '../factory.js';
import type { WebhookStepType } from '../metrics.js';
import { ACCEPTED_REVIEW_VERSIONS, type Webhook } from '../../registry/admissionregistration/webhooks.js';
import { ADMISSIONREGISTRATION_GROUP } from '../../registry/admissionregistration/match.js';
import { AuthzSession, evaluateWebhookConditions } from './conditions.js';
import { authorizerValue } from '../policy/cel.js';
import { webhookCredentials, type CredentialLookup } from './credentials.js';
import { type Hook, HookSource, matchingSpelling } from './hooks.js';
import { ReinvocationContext } from '../reinvocation.js';
import { admissionRequest, InvalidReviewError, reviewBody, type ReviewResult, type ReviewSpelling, verifyReview } from './review.js';
import type { JsonValue } from '../../merge/json-values.js';
import { isPromise, type MaybePromise } from '../../api/maybe-async.js';

export const MUTATION_ANNOTATION_PREFIX = 'mutation.webhook.admission.svc.io/';
export const PATCH_ANNOTATION_PREFIX = 'patch.webhook.admission.svc.io/';

/** A call that did not produce an answer (upstream's ErrCallingWebhook): the failure policy decides. */
export class CallingWebhookError extends Error {
  constructor(
    readonly webhook: string,
    reason: string,
  ) {
    super(`failed calling webhook ${JSON.stringify(webhook)}: ${reason}`);
  }
}

/** The webhook refused (upstream's ErrWebhookRejection). */
class WebhookRejection extends Error {
  constructor(readonly status: StatusError) {
    super(status.message);
  }
}

/** upstream's ToStatusErr: the webhook's Status, at least 400, its message prefixed with who denied. */
export function rejectionStatus(webhook: string, s: Record<string, unknown> | undefined): StatusError {
  const deniedBy = `admission webhook ${JSON.stringify(webhook)} denied the request`;
  const code = typeof s?.code === 'number' && s.code >= 400 ? s.code : 400;
  const message = typeof s?.message === 'string' && s.message ? `${deniedBy}: ${s.message}` : typeof s?.reason === 'string' && s.reason ? `${deniedBy}: ${s.reason}` : `${deniedBy} without explanation`;
  const status: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, code };
  if (typeof s?.reason === 'string' && s.reason) status.reason = s.reason as Status['reason'];
  if (typeof s?.details === 'object' && s.details !== null) status.details = s.details as Status['details'];
  return StatusError.fromStatus(status);
}

/** A network error as Go's HTTP client words it (the messages users search for). */
function goNetMessage(e: unknown, url: URL): string {
  const err = e as NodeJS.ErrnoException;
  const addr = url.port ? `${url.hostname}:${url.port}` : `${url.hostname}:443`;
  if (e instanceof WebhookTimeoutError) return 'context deadline exceeded';
  switch (err.code) {
    case 'ECONNREFUSED':
      return `dial tcp ${addr}: connect: connection refused`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `dial tcp: lookup ${url.hostname}: no such host`;
    case 'ECONNRESET':
      return `read tcp ${addr}: read: connection reset by peer`;
    default:
      if (err.code?.startsWith('ERR_TLS') || err.code === 'DEPTH_ZERO_SELF_SIGNED_CERT' || err.code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' || err.code === 'SELF_SIGNED_CERT_IN_CHAIN') {
        return `tls: failed to verify certificate: x509: ${err.message}`;
      }
      return err.message;
  }
}

interface Caller {
  client: WebhookClient;
  url: URL;
}

/** What a hook's calls go to: the caller and the path with upstream's timeout parameter, made once per hook. */
interface HookTarget {
  caller: Caller;
  /** Path and query sent (`/validate?timeout=10s`). */
  path: string;
  /** The URL as shown in errors. */
  href: string;
}

/** One client per webhook address, CA bundle and credentials, kept while configurations use it. */
class Callers {
  private readonly byKey = new Map<string, Caller>();
  /** Per hook (hooks are remade when their configuration changes), so a call builds no key. */
  private readonly byHook = new WeakMap<Hook, HookTarget>();

  constructor(private readonly credentials: CredentialLookup) {}

  target(h: Hook): HookTarget {
    let t = this.byHook.get(h);
    if (!t) {
      const caller = this.for(h.webhook);
      const url = new URL(caller.url.href);
      url.searchParams.set('timeout', `${h.webhook.timeoutSeconds ?? 10}s`);
      t = { caller, path: `${url.pathname}${url.search}`, href: url.href };
      this.byHook.set(h, t);
    }
    return t;
  }

  for(w: Webhook): Caller {
    const cc = w.clientConfig ?? {};
    const key = `${cc.url ?? ''}|${cc.service ? `${cc.service.namespace}/${cc.service.name}:${cc.service.port ?? 443}${cc.service.path ?? ''}` : ''}|${cc.caBundle ?? ''}`;
    let c = this.byKey.get(key);
    if (!c) {
      const target = targetOfClientConfig({ ...(cc.url ? { url: cc.url } : {}), ...(cc.service ? { service: { namespace: cc.service.namespace ?? '', name: cc.service.name ?? '', ...(cc.service.path ? { path: cc.service.path } : {}), ...(cc.service.port ? { port: cc.service.port } : {}) } } : {}), ...(cc.caBundle ? { caBundle: cc.caBundle } : {}) });
      const creds = this.credentials(target.url.hostname, Number(target.url.port || 443)) ?? {};
      c = { client: new WebhookClient({ ...target, ...creds, httpsOnly: true }), url: target.url };
      this.byKey.set(key, c);
    }
    return c;
  }

  close(): void {
    for (const c of this.byKey.values()) c.client.close();
    this.byKey.clear();
  }
}

/** An absent object matches no selector (upstream's matchObject). */
const objectMatches = (sel: Hook['objectSelector'], obj: ApiObject | undefined): boolean => !!obj && !(sel instanceof Error) && sel.matches(obj.metadata.labels ?? {});

export function webhookPlugin(type: 'mutating' | 'validating', d: PluginDeps): AdmissionPlugin {
  const name = type === 'mutating' ? 'MutatingAdmissionWebhook' : 'ValidatingAdmissionWebhook';
  const step: WebhookStepType = type === 'mutating' ? 'admit' : 'validating';
  const rt = d.types.get(`${ADMISSIONREGISTRATION_GROUP}/v1/${type}webhookconfigurations`);
  const source = new HookSource(rt ? d.listers.for(rt) : undefined);
  // a custom resource's served versions decide what a rule matches under matchPolicy Equivalent
  d.onStop(d.types.subscribe(() => source.invalidate()));
  const callers = new Callers(webhookCredentials(d.config.configurationOf(name)));
  d.onStop(() => callers.close());

  /** The namespace's labels for namespaceSelector: the lister's, else the store's (a namespace made a moment ago). */
  async function namespaceLabels(a: AdmissionAttributes): Promise<Readonly<Record<string, string>> | undefined> {
    const ns = d.listers.for(namespaces).get('', a.namespace);
    if (ns) return ns.metadata.labels;
    const kv = await d.store.get(objectKey(namespaces, '', a.namespace), { serializable: true });
    if (!kv) throw errors.notFound({ group: '', resource: 'namespaces' }, a.namespace);
    return (parseStored(kv.value) as ApiObject).metadata.labels;
  }

  /**
   * What the hook's rules match: the request's resource (in either group spelling), or under
   * matchPolicy Equivalent another served version of the same custom resource, as upstream's
   * equivalent-resource matching (the object is then converted to that version for the webhook).
   */
  function matchFor(h: Hook, a: AdmissionAttributes): ReviewSpelling | undefined {
    const g = matchingSpelling(h.webhook, a.operation, a.rt, a.subresource, a.requestGroup);
    if (g !== undefined) return { group: g };
    if (!a.rt.custom || h.webhook.matchPolicy === 'Exact') return undefined;
    for (const other of d.types.all()) {
      if (other === a.rt || !other.custom || other.group !== a.rt.group || other.plural !== a.rt.plural) continue;
      const g2 = matchingSpelling(h.webhook, a.operation, other, a.subresource, a.requestGroup);
      if (g2 !== undefined) return { group: g2, rt: other };
    }
    return undefined;
  }

  /**
   * Whether the hook (the `i`th of `hooks`, a snapshot of source.all()) is to be called, and as what
   * (undefined: not called). The rules' answer comes from the source's memo; a promise only when a
   * selector or a match condition has something to look at.
   */
  function shouldCall(h: Hook, i: number, hooks: readonly Hook[], a: AdmissionAttributes): MaybePromise<ReviewSpelling | undefined> {
    const spelling = hooks === source.all() ? source.rulesMatch(a.operation, a.rt, a.subresource, a.requestGroup, (x) => matchFor(x, a))[i] : matchFor(h, a);
    if (spelling === undefined) return undefined;
    const { namespaceSelector: ns, objectSelector: os, conditions } = h;
    if (!(ns instanceof Error) && ns.empty && !(os instanceof Error) && os.empty && !(conditions instanceof Error) && conditions.length === 0) return spelling;
    return selected(h, a, spelling);
  }

  /** shouldCall's selectors and match conditions, for a hook whose rules matched. */
  async function selected(h: Hook, a: AdmissionAttributes, spelling: ReviewSpelling): Promise<ReviewSpelling | undefined> {
    const ignore = h.webhook.failurePolicy === 'Ignore';
    if (h.namespaceSelector instanceof Error || h.objectSelector instanceof Error) {
      throw errors.internal(h.namespaceSelector instanceof Error ? h.namespaceSelector : (h.objectSelector as Error));
    }
    if (!h.namespaceSelector.empty) {
      let labels: Readonly<Record<string, string>> | undefined;
      if (a.rt.group === '' && a.rt.plural === 'namespaces') labels = (a.object ?? a.oldObject)?.metadata.labels;
      else if (a.rt.namespaced && a.namespace) labels = await namespaceLabels(a);
      if (a.rt.namespaced || (a.rt.group === '' && a.rt.plural === 'namespaces')) {
        if (!h.namespaceSelector.matches(labels ?? {})) return undefined;
      }
    }
    if (!h.objectSelector.empty) {
      if (!objectMatches(h.objectSelector, a.object) && !objectMatches(h.objectSelector, a.oldObject)) return undefined;
    }
    if (h.conditions instanceof Error) {
      if (ignore) return undefined;
      throw errors.forbidden(groupResourceOf(a.rt), a.name, `compilation failed: ${h.conditions.message}`);
    }
    if (h.conditions.length) {
      const request = admissionRequest(a, '', spelling, false);
      const bindings = {
        object: celValue(a.object ?? null),
        oldObject: celValue(a.oldObject ?? null),
        request: celValue(request),
        authorizer: authorizerValue(a.user, { group: a.rt.group, resource: a.rt.plural, subresource: a.subresource, namespace: a.namespace, name: a.name }),
      };
      const r = await evaluateWebhookConditions(h.conditions, bindings, new AuthzSession(d.authorizer()));
      if ('error' in r) {
        if (ignore) return undefined;
        throw errors.forbidden(groupResourceOf(a.rt), a.name, r.error);
      }
      if (!r.match) return undefined;
    }
    return spelling;
  }

  /** One call of a hook; resolves with the webhook's answer or throws CallingWebhookError / WebhookRejection / a StatusError. */
  async function call(h: Hook, a: AdmissionAttributes, spelling: ReviewSpelling): Promise<ReviewResult> {
    const w = h.webhook;
    const hookName = w.name ?? '';
    if (a.dryRun && w.sideEffects !== 'None' && w.sideEffects !== 'NoneOnDryRun') {
      throw errors.badRequest(`admission webhook ${JSON.stringify(hookName)} does not support dry run`);
    }
    const version = (w.admissionReviewVersions ?? []).find((v) => ACCEPTED_REVIEW_VERSIONS.includes(v)) as 'v1' | 'v1beta1' | undefined;
    if (!version) throw new CallingWebhookError(hookName, `webhook does not accept known AdmissionReview versions (${ACCEPTED_REVIEW_VERSIONS.join(', ')})`);
    let target: HookTarget;
    try {
      target = callers.target(h);
    } catch (e) {
      throw new CallingWebhookError(hookName, (e as Error).message);
    }
    const timeoutSeconds = w.timeoutSeconds ?? 10;
    const uid = randomUUID();
    const body = reviewBody(version, a, uid, spelling);
    let res;
    try {
      res = await target.caller.client.postPath(target.path, body, timeoutSeconds * 1000);
    } catch (e) {
      const why = e instanceof WebhookError && !(e instanceof WebhookTimeoutError) ? e.message : goNetMessage(e, target.caller.url);
      throw new CallingWebhookError(hookName, `failed to call webhook: Post ${JSON.stringify(target.href)}: ${why}`);
    }
    if (res.status < 200 || res.status >= 300) {
      const text = res.body.toString('utf8').trim();
      let detail = `the server responded with the status code ${res.status} but did not return more information`;
      try {
        const s = JSON.parse(text) as { kind?: string; message?: string };
        if (s.kind === 'Status' && s.message) detail = s.message;
      } catch {
        if (text && res.status >= 500) detail = `an error on the server (${JSON.stringify(text.slice(0, 256))}) has prevented the request from succeeding`;
      }
      throw new CallingWebhookError(hookName, `failed to call webhook: ${detail}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.body.toString('utf8'));
    } catch (e) {
      throw new CallingWebhookError(hookName, `failed to call webhook: couldn't get version/kind; json parse error: ${(e as Error).message}`);
    }
    let result: ReviewResult;
    try {
      result = verifyReview(parsed, version, uid, type === 'mutating');
    } catch (e) {
      if (e instanceof InvalidReviewError) throw new CallingWebhookError(hookName, e.message);
      throw e;
    }
    for (const [k, v] of Object.entries(result.auditAnnotations)) a.auditAnnotations[`${hookName}/${k}`] = v;
    a.warnings.push(...result.warnings);
    if (!result.allowed) throw new WebhookRejection(rejectionStatus(hookName, result.status));
    return result;
  }

  /** Runs one hook with metrics; resolves with its answer, or undefined when it failed open. */
  async function run(h: Hook, a: AdmissionAttributes, spelling: ReviewSpelling): Promise<ReviewResult | undefined> {
    const hookName = h.webhook.name ?? '';
    const started = process.hrtime.bigint();
    let code = 200;
    let rejected = false;
    try {
      return await call(h, a, spelling);
    } catch (e) {
      if (e instanceof CallingWebhookError) {
        if (h.webhook.failurePolicy === 'Ignore') {
          d.metrics.webhookFailOpen(hookName, step);
          d.log.warn(`Failed calling webhook, failing open ${hookName}: ${e.message}`);
          return undefined;
        }
        rejected = true;
        code = 500;
        d.metrics.webhookRejection(hookName, step, a.operation, 'calling_webhook_error', 0);
        d.log.warn(`Failed calling webhook, failing closed ${hookName}: ${e.message}`);
        throw errors.internal(e);
      }
      rejected = true;
      if (e instanceof WebhookRejection) {
        code = e.status.code;
        d.metrics.webhookRejection(hookName, step, a.operation, 'no_error', e.status.code);
        throw e.status;
      }
      code = (e as StatusError).code ?? 500;
      d.metrics.webhookRejection(hookName, step, a.operation, 'apiserver_internal_error', 0);
      throw e;
    } finally {
      d.metrics.webhook(hookName, step, a.operation, rejected, code, Number(process.hrtime.bigint() - started) / 1e9);
    }
  }

  /** Applies a mutating hook's patch to the object; whether it changed. */
  function applyPatch(h: Hook, a: AdmissionAttributes, result: ReviewResult): boolean {
    const hookName = h.webhook.name ?? '';
    if (result.patch === undefined) return false;
    if (result.patch instanceof Error) throw errors.internal(result.patch);
    if (Array.isArray(result.patch) && result.patch.length === 0) return false;
    if (!a.object) throw errors.internal(new Error(`admission webhook ${JSON.stringify(hookName)} attempted to modify the object, which is not supported for this operation`));
    let patched: JsonValue;
    try {
      patched = applyJsonPatch(a.object as unknown as JsonValue, result.patch);
    } catch (e) {
      throw errors.internal(e);
    }
    if (typeof patched !== 'object' || patched === null || Array.isArray(patched) || typeof (patched as { metadata?: unknown }).metadata !== 'object') {
      throw errors.internal(new Error(`the object patched by admission webhook ${JSON.stringify(hookName)} is not an object with metadata`));
    }
    const changed = JSON.stringify(patched) !== JSON.stringify(a.object);
    a.object = patched as unknown as ApiObject;
    return changed;
  }

  /** An object of the request's custom resource in another served version (through the storage version). */
  async function convertVersion(obj: ApiObject, from: ResourceType, to: ResourceType): Promise<ApiObject> {
    try {
      const stored = await from.custom!.toStorage(obj);
      const [out] = await to.custom!.fromStorage([stored]);
      return out!;
    } catch (e) {
      throw errors.internal(e);
    }
  }

  /** The attributes as the hook is to see them: the objects in the version it matched. */
  async function viewFor(a: AdmissionAttributes, m: ReviewSpelling): Promise<AdmissionAttributes> {
    if (!m.rt || m.rt === a.rt) return a;
    return {
      ...a,
      object: a.object && (await convertVersion(a.object, a.rt, m.rt)),
      oldObject: a.oldObject && (await convertVersion(a.oldObject, a.rt, m.rt)),
    };
  }

  /**
   * Calls a mutating hook and applies its patch, in the version it matched and back; `annotate` is
   * told the patch when the object changed (undefined when not). Whether the object changed.
   */
  async function callMutating(h: Hook, a: AdmissionAttributes, m: ReviewSpelling, annotate: (patch: unknown) => void): Promise<boolean> {
    const view = await viewFor(a, m);
    const result = await run(h, view, m);
    const changed = result ? applyPatch(h, view, result) : false;
    if (changed && view !== a) a.object = await convertVersion(view.object!, m.rt!, a.rt);
    annotate(changed ? result!.patch : undefined);
    return changed;
  }

  const admit = async (a: AdmissionAttributes): Promise<void> => {
    const hooks = source.all();
    const reinvocation = (a.reinvocation ??= new ReinvocationContext());
    const tracker = reinvocation.trackerFor(name);
    const round = reinvocation.isReinvoke ? 1 : 0;
    tracker.begin(a.object);
    try {
      for (const [i, h] of hooks.entries()) {
        const key = `${h.configuration}/${h.webhook.name ?? ''}`;
        if (tracker.skips(key)) continue;
        const should = shouldCall(h, i, hooks, a);
        const spelling = isPromise(should) ? await should : should;
        if (spelling === undefined) continue;
        const changed = await callMutating(h, a, spelling, (patch) => {
          a.auditAnnotations[`${MUTATION_ANNOTATION_PREFIX}round_${round}_index_${i}`] = JSON.stringify({ configuration: h.configuration, webhook: h.webhook.name ?? '', mutated: patch !== undefined });
          if (patch !== undefined) a.auditAnnotations[`${PATCH_ANNOTATION_PREFIX}round_${round}_index_${i}`] = JSON.stringify({ configuration: h.configuration, webhook: h.webhook.name ?? '', patch, patchType: 'JSONPatch' });
        });
        tracker.invoked(key, changed, h.webhook.reinvocationPolicy === 'IfNeeded');
      }
    } finally {
      tracker.end(a.object);
    }
  };

  const validate = async (a: AdmissionAttributes): Promise<void> => {
    const hooks = source.all();
    const calls: Promise<unknown>[] = [];
    for (const [i, h] of hooks.entries()) {
      const should = shouldCall(h, i, hooks, a);
      const spelling = isPromise(should) ? await should : should;
      if (spelling === undefined) continue;
      calls.push(spelling.rt && spelling.rt !== a.rt ? viewFor(a, spelling).then((view) => run(h, view, spelling)) : run(h, a, spelling));
    }
    const outcomes = await Promise.allSettled(calls);
    for (const o of outcomes) if (o.status === 'rejected') throw o.reason;
  };

  return {
    name,
    handles: (op, r, sub) => source.handles(op, r, sub),
    ...(type === 'mutating' ? { admit } : { validate }),
  };
}
