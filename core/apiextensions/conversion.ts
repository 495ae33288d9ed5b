/**
 * Conversion of custom resources between the versions of their definition, as upstream's converter:
 * strategy None rewrites apiVersion only; strategy Webhook sends a ConversionReview (v1) to the
 * definition's webhook over TLS (trusting its caBundle) and checks the answer (same uid, Success, as
 * many objects as sent, each of the desired apiVersion and kind, metadata changed only in labels and
 * annotations). A webhook that fails, answers garbage or does not answer within the timeout is an
 * error naming the kind and what went wrong; nothing is stored in that case.
 */
import { randomUUID } from 'node:crypto';
import { errors, StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { APIEXTENSIONS_GROUP, type CustomResourceDefinition } from './types.js';
import { describeCall, targetOfClientConfig, WebhookClient, WebhookStatusError, type WebhookTarget } from '../webhook/client.js';

/** Upstream gives conversion webhooks 30 seconds. */
export const WEBHOOK_TIMEOUT_MS = 30_000;
/** The largest answer read from a webhook. */
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

export interface Converter {
  /** Whether converting between different versions needs a webhook. */
  readonly webhook: boolean;
  /** `objs` (each of its own apiVersion) in `toApiVersion`; objects already there are returned as they are. */
  convert(objs: ApiObject[], toApiVersion: string): Promise<ApiObject[]>;
}

export class NoneConverter implements Converter {
  readonly webhook = false;
  async convert(objs: ApiObject[], to: string): Promise<ApiObject[]> {
    return objs.map((o) => (o.apiVersion === to ? o : { ...o, apiVersion: to }));
  }
}

export class WebhookConverter implements Converter {
  readonly webhook = true;
  private readonly target: WebhookTarget | undefined;
  private readonly client: WebhookClient | undefined;
  private readonly configError: string | undefined;

  constructor(
    private readonly crd: CustomResourceDefinition,
    private readonly timeoutMs = WEBHOOK_TIMEOUT_MS,
  ) {
    const cc = crd.spec.conversion?.webhook?.clientConfig;
    try {
      // a service reference is called by the name upstream's default resolver gives it
      this.target = targetOfClientConfig(cc ?? {});
      this.client = new WebhookClient(this.target, MAX_RESPONSE_BYTES);
    } catch (e) {
      this.configError = (e as Error).message;
    }
  }

  async convert(objs: ApiObject[], to: string): Promise<ApiObject[]> {
    const todo = objs.map((o, i) => ({ o, i })).filter(({ o }) => o.apiVersion !== to);
    if (todo.length === 0) return objs;
    const gvk = `${to}, Kind=${objs[0]!.kind ?? this.crd.spec.names.kind}`;
    const fail = (msg: string): never => {
      throw errors.internal(new Error(`conversion webhook for ${gvk} ${msg}`));
    };
    if (this.configError) fail(`failed: ${this.configError}`);
    const uid = randomUUID();
    const review = { kind: 'ConversionReview', apiVersion: `${APIEXTENSIONS_GROUP}/v1`, request: { uid, desiredAPIVersion: to, objects: todo.map(({ o }) => o) } };
    let answer: unknown;
    try {
      answer = await this.post(review);
    } catch (e) {
      if (e instanceof StatusError) throw e;
      fail(`failed: ${(e as Error).message}`);
    }
    const converted = checkReview(answer, uid, fail);
    if (converted.length !== todo.length) fail(`returned ${converted.length} objects, expected ${todo.length}`);
    const out = [...objs];
    converted.forEach((c, k) => {
      const { o, i } = todo[k]!;
      out[i] = checkConverted(c, o, to, k, fail);
    });
    return out;
  }

  private async post(review: unknown): Promise<unknown> {
    const url = this.target!.url;
    let answer: Buffer;
    try {
      answer = await this.client!.post(review, this.timeoutMs);
    } catch (e) {
      if (e instanceof WebhookStatusError) throw new Error(`the server responded with the status code ${e.code} but did not return more information`);
      throw new Error(describeCall('POST', url, e));
    }
    try {
      return JSON.parse(answer.toString('utf8'));
    } catch (e) {
      throw new Error(`unable to decode the response: ${(e as Error).message}`);
    }
  }
}

function checkReview(answer: unknown, uid: string, fail: (m: string) => never): unknown[] {
  const a = answer as { kind?: unknown; apiVersion?: unknown; response?: { uid?: unknown; convertedObjects?: unknown; result?: { status?: unknown; message?: unknown } } } | null;
  if (!a || typeof a !== 'object' || Array.isArray(a)) return fail('failed: the answer is not a ConversionReview');
  if (a.kind !== 'ConversionReview' || typeof a.apiVersion !== 'string' || !/^apiextensions\.(svc|k8s)\.io\/v1(beta1)?$/.test(a.apiVersion)) {
    return fail(`failed: expected webhook response of ${APIEXTENSIONS_GROUP}/v1, Kind=ConversionReview, got ${String(a.apiVersion ?? '')}, Kind=${String(a.kind ?? '')}`);
  }
  const r = a.response;
  if (!r || typeof r !== 'object') return fail('failed: no response provided');
  if (r.uid !== uid) return fail(`failed: expected response.uid=${JSON.stringify(uid)}, got ${JSON.stringify(r.uid ?? '')}`);
  if (r.result?.status !== 'Success') {
    const why = typeof r.result?.message === 'string' && r.result.message ? r.result.message : `response.result.status was '${String(r.result?.status ?? '')}', not 'Success'`;
    return fail(`failed: ${why}`);
  }
  if (!Array.isArray(r.convertedObjects)) return fail('failed: response.convertedObjects is not a list');
  return r.convertedObjects;
}

/** A converted object must keep what identifies it; only labels and annotations may change in its metadata. */
function checkConverted(c: unknown, original: ApiObject, to: string, k: number, fail: (m: string) => never): ApiObject {
  if (!c || typeof c !== 'object' || Array.isArray(c)) return fail(`returned invalid converted object at index ${k}: not an object`);
  const o = c as ApiObject;
  if (o.apiVersion !== to) return fail(`returned invalid converted object at index ${k}: invalid groupVersion (expected ${to}, received ${String(o.apiVersion ?? '')})`);
  if (o.kind !== original.kind) return fail(`returned invalid converted object at index ${k}: invalid kind (expected ${original.kind}, received ${String(o.kind ?? '')})`);
  const m = o.metadata as Record<string, unknown> | undefined;
  if (!m || typeof m !== 'object' || Array.isArray(m)) return fail(`returned invalid metadata in object at index ${k}: missing metadata in converted object`);
  const om = original.metadata;
  for (const f of ['name', 'namespace', 'uid'] as const) {
    if ((m[f] ?? '') !== (om[f] ?? '')) return fail(`returned invalid metadata in object at index ${k}: must have the same ${f}: ${JSON.stringify(om[f] ?? '')} != ${JSON.stringify(m[f] ?? '')}`);
  }
  for (const f of ['labels', 'annotations'] as const) {
    const v = m[f];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'object' || Array.isArray(v)) return fail(`returned invalid metadata in object at index ${k}: invalid metadata.${f} of type ${Array.isArray(v) ? 'array' : typeof v} in converted object`);
    for (const [key, val] of Object.entries(v)) {
      if (typeof val !== 'string') return fail(`returned invalid metadata in object at index ${k}: metadata.${f}[${key}] must be a string, but is ${typeof val} in converted object`);
    }
  }
  // everything else in metadata stays as it was
  const metadata = { ...om };
  if (m.labels && Object.keys(m.labels).length) metadata.labels = m.labels as Record<string, string>;
  else delete metadata.labels;
  if (m.annotations && Object.keys(m.annotations).length) metadata.annotations = m.annotations as Record<string, string>;
  else delete metadata.annotations;
  return { ...o, metadata };
}

/** The converter a definition's conversion strategy calls for. */
export function converterFor(crd: CustomResourceDefinition): Converter {
  return crd.spec.conversion?.strategy === 'Webhook' ? new WebhookConverter(crd) : new NoneConverter();
}
