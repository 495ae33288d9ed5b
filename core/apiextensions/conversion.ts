/**
 * Conversion of custom resources between the versions of their definition, as upstream's converter:
 * strategy None rewrites apiVersion only; strategy Webhook sends a ConversionReview (v1) to the
 * definition's webhook over TLS (trusting its caBundle) and checks the answer (same uid, Success, as
 * many objects as sent, each of the desired apiVersion and kind, metadata changed only in labels and
 * annotations). A webhook that fails, answers garbage or does not answer within the timeout is an
 * error naming the kind and what went wrong; nothing is stored in that case.
 */
import { randomUUID } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import { errors, StatusError } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { APIEXTENSIONS_GROUP, type CustomResourceDefinition } from './types.js';

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
  private readonly url: URL | undefined;
  private readonly configError: string | undefined;
  private readonly ca: string | undefined;

  constructor(
    private readonly crd: CustomResourceDefinition,
    private readonly timeoutMs = WEBHOOK_TIMEOUT_MS,
  ) {
    const cc = crd.spec.conversion?.webhook?.clientConfig;
    if (cc?.url) this.url = new URL(cc.url);
    else if (cc?.service) this.configError = `service ${cc.service.namespace}/${cc.service.name} cannot be reached: this server has no Services; use clientConfig.url`;
    else this.configError = 'no webhook client configuration';
    this.ca = cc?.caBundle ? Buffer.from(cc.caBundle, 'base64').toString('utf8') : undefined;
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

  private post(review: unknown): Promise<unknown> {
    const url = this.url!;
    const body = Buffer.from(JSON.stringify(review));
    return new Promise((resolve, reject) => {
      const req = httpsRequest(
        url,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': body.length },
          ...(this.ca ? { ca: this.ca } : {}),
          timeout: this.timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_RESPONSE_BYTES) req.destroy(new Error('response too large'));
            else chunks.push(c);
          });
          res.on('end', () => {
            if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) >= 300) return reject(new Error(`the server responded with the status code ${res.statusCode} but did not return more information`));
            try {
              resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
            } catch (e) {
              reject(new Error(`unable to decode the response: ${(e as Error).message}`));
            }
          });
          res.on('error', reject);
        },
      );
      const deadline = setTimeout(() => req.destroy(new Error(`Post "${url.href}": context deadline exceeded`)), this.timeoutMs);
      req.on('timeout', () => req.destroy(new Error(`Post "${url.href}": context deadline exceeded`)));
      req.on('error', (e) => reject(new Error(e.message.startsWith('Post ') ? e.message : `Post "${url.href}": ${e.message}`)));
      req.on('close', () => clearTimeout(deadline));
      req.end(body);
    });
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
