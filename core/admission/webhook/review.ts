/**
 * The AdmissionReview round trip (admission.svc.io v1 and v1beta1; answers are accepted in either
 * group spelling): the request as upstream's CreateAdmissionObjects builds it, and the answer checked
 * as upstream's VerifyAdmissionResponse checks it (v1: apiVersion, kind and uid must match; a patch
 * needs patchType JSONPatch; v1beta1 is lenient as upstream is).
 */
import type { AdmissionAttributes } from '../attributes.js';
import type { ResourceType } from '../../registry/resource-type.js';
import { withTypeMeta } from '../../codec/object-bytes.js';

export const REVIEW_GROUPS = ['admission.svc.io', 'admission.k8s.io'];

export interface ReviewSpelling {
  /** The group the review names for the resource (the rule's spelling when matched through an alias). */
  group: string;
  /** The version matched, when it is another served version of the request's custom resource. */
  rt?: ResourceType;
}

const withApiVersionGroup = (obj: Record<string, unknown>, canonical: string, spelled: string): Record<string, unknown> => {
  if (canonical === spelled || typeof obj.apiVersion !== 'string' || !obj.apiVersion.startsWith(`${canonical}/`)) return obj;
  return { ...obj, apiVersion: `${spelled}${obj.apiVersion.slice(canonical.length)}` };
};

/** The `request` of an AdmissionReview (and the `request` variable of match conditions). */
export function admissionRequest(a: AdmissionAttributes, uid: string, spelling: ReviewSpelling, withObjects: boolean): Record<string, unknown> {
  // the version the webhook matched (another served version of a custom resource), and the request's own
  const rt = spelling.rt ?? a.rt;
  const kind = a.kind ?? { group: spelling.group, version: rt.version, kind: rt.kind };
  const req: Record<string, unknown> = {
    uid,
    kind,
    resource: { group: spelling.group, version: rt.version, resource: rt.plural },
  };
  if (a.subresource) req.subResource = a.subresource;
  req.requestKind = a.kind ?? { group: a.requestGroup, version: a.rt.version, kind: a.rt.kind };
  req.requestResource = { group: a.requestGroup, version: a.rt.version, resource: a.rt.plural };
  if (a.subresource) req.requestSubResource = a.subresource;
  if (a.name) req.name = a.name;
  if (a.namespace) req.namespace = a.namespace;
  req.operation = a.operation;
  const user: Record<string, unknown> = { username: a.user.username };
  if (a.user.uid) user.uid = a.user.uid;
  if (a.user.groups?.length) user.groups = a.user.groups;
  if (a.user.extra && Object.keys(a.user.extra).length) user.extra = a.user.extra;
  req.userInfo = user;
  if (withObjects) {
    if (a.object) req.object = objectForReview(a.object as unknown as Record<string, unknown>, rt.group, spelling.group, a.operation === 'UPDATE' ? a.oldRevision : undefined);
    if (a.oldObject) req.oldObject = objectForReview(a.oldObject as unknown as Record<string, unknown>, rt.group, spelling.group, a.oldRevision);
  }
  req.dryRun = a.dryRun;
  req.options = a.options;
  return req;
}

/** The object as the webhook sees it: its resourceVersion (the registry strips it while it works) and the review's group spelling. */
function objectForReview(obj: Record<string, unknown>, canonical: string, spelled: string, revision: number | undefined): Record<string, unknown> {
  let out = withApiVersionGroup(obj, canonical, spelled);
  const meta = out.metadata as Record<string, unknown> | undefined;
  if (revision !== undefined && meta && meta.resourceVersion === undefined) out = { ...out, metadata: { ...meta, resourceVersion: String(revision) } };
  return out;
}

export function admissionReview(version: 'v1' | 'v1beta1', request: Record<string, unknown>): Record<string, unknown> {
  return { kind: 'AdmissionReview', apiVersion: `admission.svc.io/${version}`, request };
}

/** What request.object holds while the review is encoded, to be replaced by the object's own bytes. */
const OBJECT_SLOT = '\u0000object\u0000';
const OBJECT_SLOT_JSON = `"object":${JSON.stringify(OBJECT_SLOT)}`;

/**
 * The review's JSON body. When the registry already encoded the request's object (`a.objectJson`, a
 * create) and the review shows it as it is (the version and group spelling it was written in), those
 * bytes are spliced in behind its TypeMeta instead of encoding the object again; the fields keep
 * their order either way.
 */
export function reviewBody(version: 'v1' | 'v1beta1', a: AdmissionAttributes, uid: string, spelling: ReviewSpelling): Buffer {
  const request = admissionRequest(a, uid, spelling, true);
  const pre = a.objectJson;
  const obj = a.object as unknown as Record<string, unknown> | undefined;
  if (!pre || pre.object !== a.object || !obj || request.object !== obj || typeof obj.apiVersion !== 'string' || typeof obj.kind !== 'string') {
    return Buffer.from(JSON.stringify(admissionReview(version, request)));
  }
  request.object = OBJECT_SLOT;
  const text = JSON.stringify(admissionReview(version, request));
  const at = text.indexOf(OBJECT_SLOT_JSON);
  const cut = at + OBJECT_SLOT_JSON.length - JSON.stringify(OBJECT_SLOT).length;
  return Buffer.concat([Buffer.from(text.slice(0, cut)), withTypeMeta(pre.json, obj.apiVersion, obj.kind), Buffer.from(text.slice(at + OBJECT_SLOT_JSON.length))]);
}

export interface ReviewResult {
  allowed: boolean;
  /** The webhook's Status when it refused (or warned in it). */
  status?: Record<string, unknown>;
  /** A JSON Patch (decoded), when the webhook sent one. */
  patch?: unknown;
  auditAnnotations: Record<string, string>;
  warnings: string[];
}

/** A review answer that is not one: the reason, worded as upstream's. */
export class InvalidReviewError extends Error {}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks and reads a webhook's answer (`body` already parsed as JSON). */
export function verifyReview(body: unknown, version: 'v1' | 'v1beta1', uid: string, mutating: boolean): ReviewResult {
  if (!isObj(body)) throw new InvalidReviewError('webhook response was absent');
  if (version === 'v1') {
    const av = typeof body.apiVersion === 'string' ? body.apiVersion : '';
    const kind = typeof body.kind === 'string' ? body.kind : '';
    if (!REVIEW_GROUPS.some((g) => av === `${g}/v1`) || kind !== 'AdmissionReview') {
      throw new InvalidReviewError(`expected webhook response of admission.svc.io/v1, Kind=AdmissionReview, got ${av}, Kind=${kind}`);
    }
  }
  const r = body.response;
  if (!isObj(r)) throw new InvalidReviewError('webhook response was absent');
  if (version === 'v1' && r.uid !== uid) throw new InvalidReviewError(`expected response.uid=${JSON.stringify(uid)}, got ${JSON.stringify(typeof r.uid === 'string' ? r.uid : '')}`);
  const patchB64 = typeof r.patch === 'string' ? r.patch : '';
  const patchType = typeof r.patchType === 'string' ? r.patchType : '';
  if (version === 'v1') {
    if (patchB64 && !patchType) throw new InvalidReviewError('webhook returned response.patch but not response.patchType');
    if (!patchB64 && patchType) throw new InvalidReviewError('webhook returned response.patchType but not response.patch');
  }
  if (patchB64 && patchType && patchType !== 'JSONPatch') throw new InvalidReviewError(`webhook returned invalid response.patchType of ${JSON.stringify(patchType)}`);
  if (patchB64 && !mutating) throw new InvalidReviewError('validating webhooks may not return patches');
  const out: ReviewResult = { allowed: r.allowed === true, auditAnnotations: {}, warnings: [] };
  if (isObj(r.status)) out.status = r.status;
  if (patchB64) {
    let text: string;
    try {
      text = Buffer.from(patchB64, 'base64').toString('utf8');
      out.patch = JSON.parse(text);
    } catch (e) {
      // upstream decodes the patch later and answers 500 for one it cannot read
      out.patch = new Error(`invalid JSON patch: ${(e as Error).message}`);
    }
  }
  if (isObj(r.auditAnnotations)) for (const [k, v] of Object.entries(r.auditAnnotations)) if (typeof v === 'string') out.auditAnnotations[k] = v;
  if (Array.isArray(r.warnings)) for (const w of r.warnings) if (typeof w === 'string') out.warnings.push(w);
  return out;
}
