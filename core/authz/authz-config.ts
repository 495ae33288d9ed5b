/**
 * The authorization configuration: which authorizers run, in which order, and how each webhook is
 * called. It comes either from the structured file (--authorization-config: AuthorizationConfiguration
 * apiserver.config.svc.io/v1, also v1beta1 / v1alpha1 as upstream accepts) or from the legacy flags
 * (--authorization-mode and --authorization-webhook-*), which upstream converts to the same shape.
 *
 * The file is decoded strictly (unknown or duplicate fields are errors), defaulted (authorizedTTL 5m,
 * unauthorizedTTL 30s) and validated field by field as upstream validates it, match conditions
 * included (compiled here, at most 64 per webhook). Every problem is an error naming its field.
 * `resolveAuthorizationPlan` also reads the webhooks' kubeconfig files, so a plan is ready to build.
 */
import { StartError } from '../api/start-error.js';
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { type FieldError, fieldErrors, fieldErrorString } from '../api/field-errors.js';
import { isDNS1123Subdomain } from '../api/validation.js';
import { decodeYaml } from '../codec/yaml.js';
import { CelCompileError, type CompiledCondition, compileMatchCondition } from './match-conditions.js';
import type { FailurePolicy } from './webhook.js';
import type { WebhookTarget } from '../webhook/client.js';
import { loadWebhookKubeconfig } from '../webhook/kubeconfig.js';

export class AuthorizationConfigError extends StartError {}

const CONFIG_GROUP = 'apiserver.config.svc.io';
const CONFIG_VERSIONS = ['v1', 'v1beta1', 'v1alpha1'];
const MAX_MATCH_CONDITIONS = 64;
const MAX_TIMEOUT_MS = 30_000;
const DEFAULT_AUTHORIZED_TTL_MS = 5 * 60_000;
const DEFAULT_UNAUTHORIZED_TTL_MS = 30_000;

/** Authorizer types the file accepts (the spec's table); the flags also accept AlwaysAllow, AlwaysDeny and ABAC. */
export const FILE_AUTHORIZER_TYPES = ['Node', 'RBAC', 'Webhook'];

export interface WebhookConfig {
  timeoutMs: number;
  authorizedTTLMs: number;
  unauthorizedTTLMs: number;
  subjectAccessReviewVersion: string;
  matchConditionSubjectAccessReviewVersion: string;
  failurePolicy: string;
  connectionInfo: { type: string; kubeConfigFile?: string };
  matchConditions: { expression: string }[];
}

export interface AuthorizerConfig {
  type: string;
  name: string;
  webhook?: WebhookConfig;
}

/** A webhook ready to be built: its kubeconfig read and its conditions compiled. */
export interface WebhookPlan {
  name: string;
  target: WebhookTarget;
  version: 'v1' | 'v1beta1';
  timeoutMs: number;
  authorizedTTLMs: number;
  unauthorizedTTLMs: number;
  failurePolicy: FailurePolicy;
  matchConditions: CompiledCondition[];
}

export type AuthorizerPlan = { type: string; name: string; webhook?: WebhookPlan };

// ---------------------------------------------------------------------------------------------
// Durations

/** Parses a Go duration (`1h2m3.5s`, `-1s`, `0`) into milliseconds. */
export function parseGoDuration(text: string): number {
  const m = /^([-+]?)(.*)$/.exec(text)!;
  const body = m[2]!;
  if (body === '0') return 0;
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;
  let total = 0;
  let at = 0;
  while (at < body.length) {
    re.lastIndex = at;
    const p = re.exec(body);
    if (!p) throw new Error(`time: invalid duration ${JSON.stringify(text)}`);
    total += Number(p[1]) * unit[p[2]!]!;
    at = re.lastIndex;
  }
  if (body.length === 0) throw new Error(`time: invalid duration ${JSON.stringify(text)}`);
  return m[1] === '-' ? -total : total;
}

/** Go's Duration.String() for whole milliseconds: `45s`, `1m0s`, `5m0s`, `1h0m0s`, `500ms`, `0s`. */
export function goDurationString(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  if (rest < 1000) return `${sign}${rest}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = (rest / 1000).toString();
  if (h) return `${sign}${h}h${m}m${s}s`;
  if (m) return `${sign}${m}m${s}s`;
  return `${sign}${s}s`;
}

// ---------------------------------------------------------------------------------------------
// Strict decoding

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const jsonType = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v === 'boolean' ? 'bool' : typeof v);

/** Known fields per object, by path pattern (`[]` for list items). */
const knownFields: Readonly<Record<string, readonly string[]>> = {
  '': ['apiVersion', 'kind', 'authorizers'],
  'authorizers[]': ['type', 'name', 'webhook'],
  'authorizers[].webhook': [
    'authorizedTTL',
    'unauthorizedTTL',
    'timeout',
    'subjectAccessReviewVersion',
    'matchConditionSubjectAccessReviewVersion',
    'failurePolicy',
    'connectionInfo',
    'matchConditions',
  ],
  'authorizers[].webhook.connectionInfo': ['type', 'kubeConfigFile'],
  'authorizers[].webhook.matchConditions[]': ['expression'],
};

/** Unknown fields, as upstream's strict decoder lists them (`authorizers[0].foo`). */
function unknownFields(v: unknown, path: string, pattern: string, out: string[]): void {
  if (Array.isArray(v)) {
    v.forEach((x, i) => unknownFields(x, `${path}[${i}]`, `${pattern}[]`, out));
    return;
  }
  if (!isObj(v)) return;
  const known = knownFields[pattern];
  if (!known) return;
  for (const [k, x] of Object.entries(v)) {
    const p = path ? `${path}.${k}` : k;
    if (!known.includes(k)) out.push(p);
    else unknownFields(x, p, pattern ? `${pattern}.${k}` : k, out);
  }
}

class Decoder {
  readonly errors: string[] = [];
  constructor(private readonly goPath: string) {}

  private typeError(field: string, got: unknown, want: string): void {
    this.errors.push(`json: cannot unmarshal ${jsonType(got)} into Go struct field ${this.goPath}.${field} of type ${want}`);
  }

  string(o: Obj, key: string, field: string): string {
    const v = o[key];
    if (v === undefined || v === null) return '';
    if (typeof v !== 'string') {
      this.typeError(field, v, 'string');
      return '';
    }
    return v;
  }

  duration(o: Obj, key: string, field: string): number {
    const v = o[key];
    if (v === undefined || v === null) return 0;
    if (typeof v !== 'string') {
      this.typeError(field, v, 'string');
      return 0;
    }
    try {
      return parseGoDuration(v);
    } catch (e) {
      this.errors.push(`${field}: ${(e as Error).message}`);
      return 0;
    }
  }

  list(o: Obj, key: string, field: string): unknown[] {
    const v = o[key];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) {
      this.typeError(field, v, 'array');
      return [];
    }
    return v;
  }

  object(v: unknown, field: string): Obj | undefined {
    if (v === undefined || v === null) return undefined;
    if (!isObj(v)) {
      this.typeError(field, v, 'object');
      return undefined;
    }
    return v;
  }
}

function decodeWebhook(d: Decoder, o: Obj, at: string): WebhookConfig {
  const ci = d.object(o.connectionInfo, `${at}.connectionInfo`) ?? {};
  const conditions = d.list(o, 'matchConditions', `${at}.matchConditions`).map((c, j) => {
    const co = d.object(c, `${at}.matchConditions[${j}]`) ?? {};
    return { expression: d.string(co, 'expression', `${at}.matchConditions[${j}].expression`) };
  });
  const w: WebhookConfig = {
    timeoutMs: d.duration(o, 'timeout', `${at}.timeout`),
    authorizedTTLMs: d.duration(o, 'authorizedTTL', `${at}.authorizedTTL`),
    unauthorizedTTLMs: d.duration(o, 'unauthorizedTTL', `${at}.unauthorizedTTL`),
    subjectAccessReviewVersion: d.string(o, 'subjectAccessReviewVersion', `${at}.subjectAccessReviewVersion`),
    matchConditionSubjectAccessReviewVersion: d.string(o, 'matchConditionSubjectAccessReviewVersion', `${at}.matchConditionSubjectAccessReviewVersion`),
    failurePolicy: d.string(o, 'failurePolicy', `${at}.failurePolicy`),
    connectionInfo: { type: d.string(ci, 'type', `${at}.connectionInfo.type`) },
    matchConditions: conditions,
  };
  if (ci.kubeConfigFile !== undefined && ci.kubeConfigFile !== null) w.connectionInfo.kubeConfigFile = d.string(ci, 'kubeConfigFile', `${at}.connectionInfo.kubeConfigFile`);
  // upstream's defaults (v1 SetDefaults_WebhookConfiguration)
  if (w.authorizedTTLMs === 0) w.authorizedTTLMs = DEFAULT_AUTHORIZED_TTL_MS;
  if (w.unauthorizedTTLMs === 0) w.unauthorizedTTLMs = DEFAULT_UNAUTHORIZED_TTL_MS;
  return w;
}

/** Decodes the file's text: TypeMeta, strict fields, types and defaults. Throws with every decoding problem. */
export function decodeAuthorizationConfig(text: string): AuthorizerConfig[] {
  let doc: { value: unknown; duplicates: string[] };
  try {
    doc = decodeYaml(text);
  } catch (e) {
    throw new AuthorizationConfigError((e as Error).message);
  }
  const root = doc.value;
  if (!isObj(root)) throw new AuthorizationConfigError(`couldn't get version/kind; json parse error: the document is ${jsonType(root)}, not an object`);
  const apiVersion = typeof root.apiVersion === 'string' ? root.apiVersion : '';
  const kind = typeof root.kind === 'string' ? root.kind : '';
  if (!kind) throw new AuthorizationConfigError(`Object 'Kind' is missing in '${text.trim().slice(0, 200)}'`);
  if (!apiVersion) throw new AuthorizationConfigError(`Object 'apiVersion' is missing in '${text.trim().slice(0, 200)}'`);
  const slash = apiVersion.lastIndexOf('/');
  if (kind !== 'AuthorizationConfiguration' || apiVersion.slice(0, slash) !== CONFIG_GROUP || !CONFIG_VERSIONS.includes(apiVersion.slice(slash + 1))) {
    throw new AuthorizationConfigError(`no kind ${JSON.stringify(kind)} is registered for version ${JSON.stringify(apiVersion)}`);
  }
  const strict: string[] = doc.duplicates.length ? [`yaml: unmarshal errors:\n  ${doc.duplicates.join('\n  ')}`] : [];
  const unknown: string[] = [];
  unknownFields(root, '', '', unknown);
  strict.push(...unknown.map((f) => `unknown field ${JSON.stringify(f)}`));
  if (strict.length) throw new AuthorizationConfigError(`strict decoding error: ${strict.join(', ')}`);
  const d = new Decoder('AuthorizationConfiguration');
  const out = d.list(root, 'authorizers', 'authorizers').map((a, i) => {
    const at = `authorizers[${i}]`;
    const o = d.object(a, at) ?? {};
    const c: AuthorizerConfig = { type: d.string(o, 'type', `${at}.type`), name: d.string(o, 'name', `${at}.name`) };
    const w = d.object(o.webhook, `${at}.webhook`);
    if (w) c.webhook = decodeWebhook(d, w, `${at}.webhook`);
    return c;
  });
  if (d.errors.length) throw new AuthorizationConfigError(d.errors.join(', '));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Validation

export interface ValidationOptions {
  /** Types this build can run (a subset of FILE_AUTHORIZER_TYPES, e.g. without RBAC). */
  knownTypes: readonly string[];
  withSelectors: boolean;
}

function validateWebhook(w: WebhookConfig, at: string, o: ValidationOptions, compiled: CompiledCondition[]): FieldError[] {
  const errs: FieldError[] = [];
  if (w.timeoutMs === 0) errs.push(fieldErrors.required(`${at}.timeout`));
  else if (w.timeoutMs > MAX_TIMEOUT_MS || w.timeoutMs < 0) errs.push(fieldErrors.invalid(`${at}.timeout`, goDurationString(w.timeoutMs), 'must be > 0s and <= 30s'));
  if (w.authorizedTTLMs < 0) errs.push(fieldErrors.invalid(`${at}.authorizedTTL`, goDurationString(w.authorizedTTLMs), 'must be > 0s'));
  if (w.unauthorizedTTLMs < 0) errs.push(fieldErrors.invalid(`${at}.unauthorizedTTL`, goDurationString(w.unauthorizedTTLMs), 'must be > 0s'));
  if (w.subjectAccessReviewVersion === '') errs.push(fieldErrors.required(`${at}.subjectAccessReviewVersion`));
  else if (!['v1', 'v1beta1'].includes(w.subjectAccessReviewVersion)) errs.push(fieldErrors.notSupported(`${at}.subjectAccessReviewVersion`, w.subjectAccessReviewVersion, ['v1', 'v1beta1']));
  if (w.matchConditionSubjectAccessReviewVersion === '') {
    if (w.matchConditions.length) errs.push(fieldErrors.required(`${at}.matchConditionSubjectAccessReviewVersion`, 'required if match conditions are specified'));
  } else if (w.matchConditionSubjectAccessReviewVersion !== 'v1') {
    errs.push(fieldErrors.notSupported(`${at}.matchConditionSubjectAccessReviewVersion`, w.matchConditionSubjectAccessReviewVersion, ['v1']));
  }
  if (w.failurePolicy === '') errs.push(fieldErrors.required(`${at}.failurePolicy`));
  else if (!['NoOpinion', 'Deny'].includes(w.failurePolicy)) errs.push(fieldErrors.notSupported(`${at}.failurePolicy`, w.failurePolicy, ['NoOpinion', 'Deny']));
  errs.push(...validateConnection(w.connectionInfo, `${at}.connectionInfo`));
  errs.push(...compileConditions(w.matchConditions, `${at}.matchConditions`, o, compiled));
  return errs;
}

function validateConnection(ci: WebhookConfig['connectionInfo'], at: string): FieldError[] {
  const file = ci.kubeConfigFile;
  switch (ci.type) {
    case '':
      return [fieldErrors.required(`${at}.type`)];
    case 'InClusterConfig':
      if (file !== undefined) return [fieldErrors.invalid(`${at}.kubeConfigFile`, file, 'can only be set when type=KubeConfigFile')];
      // upstream's kube-apiserver refuses it too: it would call the API server it is part of
      return [fieldErrors.invalid(`${at}.type`, ci.type, 'InClusterConfig is not supported by the API server itself; use KubeConfigFile')];
    case 'KubeConfigFile': {
      if (!file) return [fieldErrors.required(`${at}.kubeConfigFile`)];
      if (!isAbsolute(file)) return [fieldErrors.invalid(`${at}.kubeConfigFile`, file, 'must be an absolute path')];
      try {
        if (!statSync(file).isFile()) return [fieldErrors.invalid(`${at}.kubeConfigFile`, file, 'must be a regular file')];
      } catch (e) {
        return [fieldErrors.invalid(`${at}.kubeConfigFile`, file, `error loading file: ${(e as Error).message}`)];
      }
      return [];
    }
    default:
      return [fieldErrors.notSupported(`${at}.type`, ci.type, ['InClusterConfig', 'KubeConfigFile'])];
  }
}

function compileConditions(conds: readonly { expression: string }[], at: string, o: ValidationOptions, compiled: CompiledCondition[]): FieldError[] {
  if (conds.length > MAX_MATCH_CONDITIONS) return [fieldErrors.tooMany(at, conds.length, MAX_MATCH_CONDITIONS)];
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  conds.forEach((c, i) => {
    const path = `${at}[${i}].expression`;
    if (c.expression.trim() === '') return void errs.push(fieldErrors.required(path));
    if (seen.has(c.expression)) return void errs.push(fieldErrors.duplicate(path, c.expression));
    seen.add(c.expression);
    try {
      compiled.push(compileMatchCondition(c.expression, { withSelectors: o.withSelectors }));
    } catch (e) {
      if (!(e instanceof CelCompileError)) throw e;
      errs.push(fieldErrors.invalid(path, c.expression, e.message));
    }
  });
  return errs;
}

/** Upstream's ValidateAuthorizationConfiguration; fills `compiled` with each webhook's conditions (by authorizer index). */
export function validateAuthorizationConfig(authorizers: readonly AuthorizerConfig[], o: ValidationOptions, compiled: Map<number, CompiledCondition[]>): FieldError[] {
  const errs: FieldError[] = [];
  if (authorizers.length === 0) errs.push(fieldErrors.required('authorizers', 'at least one authorization mode must be defined'));
  const types = new Set<string>();
  const names = new Set<string>();
  authorizers.forEach((a, i) => {
    const at = `authorizers[${i}]`;
    if (a.type === '') return void errs.push(fieldErrors.required(`${at}.type`));
    if (!FILE_AUTHORIZER_TYPES.includes(a.type)) return void errs.push(fieldErrors.notSupported(`${at}.type`, a.type, FILE_AUTHORIZER_TYPES));
    if (types.has(a.type) && a.type !== 'Webhook') return void errs.push(fieldErrors.duplicate(`${at}.type`, a.type));
    types.add(a.type);
    if (a.name === '') errs.push(fieldErrors.required(`${at}.name`));
    else if (names.has(a.name)) errs.push(fieldErrors.duplicate(`${at}.name`, a.name));
    else {
      const bad = isDNS1123Subdomain(a.name);
      if (bad.length) errs.push(fieldErrors.invalid(`${at}.name`, a.name, `authorizer name is invalid: ${bad.join(', ')}`));
    }
    names.add(a.name);
    if (a.type === 'Webhook') {
      if (!a.webhook) return void errs.push(fieldErrors.required(`${at}.webhook`, 'required when type=Webhook'));
      const c: CompiledCondition[] = [];
      errs.push(...validateWebhook(a.webhook, `${at}.webhook`, o, c));
      compiled.set(i, c);
    } else if (a.webhook) errs.push(fieldErrors.invalid(`${at}.webhook`, 'non-null', 'may only be specified when type=Webhook'));
    else if (!o.knownTypes.includes(a.type)) errs.push(fieldErrors.invalid(`${at}.type`, a.type, 'this authorizer is not available in this server build'));
  });
  return errs;
}

const aggregate = (msgs: readonly string[]): string => (msgs.length === 1 ? msgs[0]! : `[${msgs.join(', ')}]`);

/** Resolves configured authorizers into a plan: each webhook's kubeconfig read, its conditions compiled. */
export function planFor(authorizers: readonly AuthorizerConfig[], compiled: ReadonlyMap<number, CompiledCondition[]>): AuthorizerPlan[] {
  return authorizers.map((a, i) => {
    if (a.type !== 'Webhook' || !a.webhook) return { type: a.type, name: a.name };
    const w = a.webhook;
    let target: WebhookTarget;
    try {
      target = loadWebhookKubeconfig(w.connectionInfo.kubeConfigFile!);
    } catch (e) {
      throw new AuthorizationConfigError(`authorizers[${i}].webhook.connectionInfo.kubeConfigFile: ${(e as Error).message}`);
    }
    return {
      type: a.type,
      name: a.name,
      webhook: {
        name: a.name,
        target,
        version: w.subjectAccessReviewVersion as 'v1' | 'v1beta1',
        timeoutMs: w.timeoutMs,
        authorizedTTLMs: w.authorizedTTLMs,
        unauthorizedTTLMs: w.unauthorizedTTLMs,
        failurePolicy: w.failurePolicy as FailurePolicy,
        matchConditions: compiled.get(i) ?? [],
      },
    };
  });
}

/** Decodes, validates and resolves a configuration file's text. */
export function planFromFileText(text: string, o: ValidationOptions): AuthorizerPlan[] {
  const authorizers = decodeAuthorizationConfig(text);
  const compiled = new Map<number, CompiledCondition[]>();
  const errs = validateAuthorizationConfig(authorizers, o, compiled);
  if (errs.length) throw new AuthorizationConfigError(aggregate(errs.map(fieldErrorString)));
  return planFor(authorizers, compiled);
}

export function readConfigFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new AuthorizationConfigError(`failed to read file at ${JSON.stringify(path)}: ${(e as Error).message}`);
  }
}
