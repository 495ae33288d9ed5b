/**
 * The CEL environment of admission policies (upstream's admission plugin CEL environment): the
 * variables `object`, `oldObject`, `request` (an AdmissionRequest), `params` (when the policy has a
 * paramKind), `namespaceObject`, `authorizer` (not in message expressions) and `variables` (the
 * policy's variables, each typed by its expression), with the strings and Kubernetes libraries and
 * upstream's authorizer library.
 *
 * Environments are declared per shape (params or not, authorizer or not, the variables' names and
 * types, and, for the type-checking controller, the object and params types from schemas) and kept,
 * so the CEL layer's compile cache serves each expression once per shape.
 *
 * The authorizer library's checks are synchronous in CEL, while authorizers may answer later
 * (webhooks): a check whose answer is not at hand records the question and fails the evaluation;
 * the evaluator asks, waits, and evaluates again with the answers cached (AuthzSession).
 */
import type { CelFunc, CelType } from '@bufbuild/cel';
import { isPromise } from '../../api/maybe-async.js';
import { canonicalSpelling, respellApiVersion } from '../../api/group-aliases.js';
import { apiVersionOf, type ResourceType } from '../../registry/resource-type.js';
import type { TypeRegistry } from '../../registry/type-registry.js';
import type { UserInfo } from '../../api/types.js';
import type { Attributes, Authorizer, AuthorizerDecision } from '../../authz/authorizer.js';
import { compile, type CompiledExpression } from '../../cel/compile.js';
import { celEnvironment, type CelEnvironment, type CelObjectDecl, type CelTypeDecl } from '../../cel/environment.js';
import { CelCompileError } from '../../cel/errors.js';
import { celLib } from '../../cel/library.js';
import type { JsonValue } from '../../merge/json-values.js';

export { CelCompileError };

/** The kind a paramKind names among the served types ('v1' core; `<name>.k8s.io` spellings allowed). */
export function resolveKind(types: TypeRegistry, apiVersion: string, kind: string): ResourceType | undefined {
  const av = respellApiVersion(apiVersion, canonicalSpelling);
  return types.all().find((t) => apiVersionOf(t) === av && t.kind === kind && !t.virtual);
}

/** A GroupVersionKind as Go prints it: `apps/v1, Kind=Deployment`, `/v1, Kind=ConfigMap`. */
export function gvkString(apiVersion: string, kind: string): string {
  const slash = apiVersion.indexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  return `${group}/${version}, Kind=${kind}`;
}



const STRINGS: CelTypeDecl = { list: 'string' };

/** upstream's hand-made types: the request, the namespace object, the authorizer's values. */
const BASE_OBJECTS: Record<string, CelObjectDecl> = {
  'kubernetes.AdmissionRequest': {
    fields: {
      kind: { object: 'kubernetes.GroupVersionKind' },
      resource: { object: 'kubernetes.GroupVersionResource' },
      subResource: 'string',
      requestKind: { object: 'kubernetes.GroupVersionKind' },
      requestResource: { object: 'kubernetes.GroupVersionResource' },
      requestSubResource: 'string',
      name: 'string',
      namespace: 'string',
      operation: 'string',
      userInfo: { object: 'kubernetes.UserInfo' },
      dryRun: 'bool',
      options: 'dyn',
    },
  },
  'kubernetes.GroupVersionKind': { fields: { group: 'string', version: 'string', kind: 'string' } },
  'kubernetes.GroupVersionResource': { fields: { group: 'string', version: 'string', resource: 'string' } },
  'kubernetes.UserInfo': { fields: { username: 'string', uid: 'string', groups: STRINGS, extra: { map: STRINGS } } },
  'kubernetes.Namespace': {
    fields: {
      metadata: { object: 'kubernetes.NamespaceMetadata' },
      spec: { object: 'kubernetes.NamespaceSpec' },
      status: { object: 'kubernetes.NamespaceStatus' },
    },
  },
  'kubernetes.NamespaceMetadata': {
    fields: {
      name: 'string',
      generateName: 'string',
      namespace: 'string',
      labels: { map: 'string' },
      annotations: { map: 'string' },
      uid: 'string',
      creationTimestamp: 'dyn',
      deletionGracePeriodSeconds: 'int',
      deletionTimestamp: 'dyn',
      generation: 'int',
      resourceVersion: 'string',
      finalizers: STRINGS,
    },
  },
  'kubernetes.NamespaceSpec': { fields: { finalizers: STRINGS } },
  'kubernetes.NamespaceStatus': { fields: { phase: 'string', conditions: { list: 'dyn' } } },
  'kubernetes.authorization.Authorizer': { fields: { requestResource: { object: 'kubernetes.authorization.ResourceCheck' } } },
  'kubernetes.authorization.ResourceCheck': { fields: {} },
};

/** A runtime error's text as cel-go words the common ones (a missing key, division by zero). */
export function celErrorText(e: unknown): string {
  const m = (e as Error)?.message ?? String(e);
  const key = /^field not found: (.*)$/.exec(m);
  if (key) return `no such key: ${key[1]}`;
  if (m === 'int divide by zero' || m === 'uint divide by zero') return 'division by zero';
  if (m === 'int modulus by zero' || m === 'uint modulus by zero') return 'modulus by zero';
  return m;
}

/** A variable as an environment declares it: its name and the type its expression has. */
export interface VariableDecl {
  name: string;
  type: CelTypeDecl;
}

export interface PolicyEnvironmentOptions {
  params: boolean;
  authorizer: boolean;
  variables: readonly VariableDecl[];
  /** A mutating policy's environment: `Object{...}` and `JSONPatch{...}` construction, `jsonpatch.escapeKey`. */
  mutating?: boolean;
  /** Types for object/oldObject and params (the type-checking controller); dyn when absent. */
  typed?: { object?: CelTypeDecl; params?: CelTypeDecl; objects: Record<string, CelObjectDecl>; key: string };
}

const environments = new Map<string, CelEnvironment>();
const MAX_ENVIRONMENTS = 512;

const declKey = (t: CelTypeDecl): string => (typeof t === 'string' ? t : JSON.stringify(t));

/** The environment for this shape (declared once, kept). */
export function policyEnvironment(o: PolicyEnvironmentOptions): CelEnvironment {
  const key = `${o.params ? 'p' : ''}${o.authorizer ? 'a' : ''}${o.mutating ? 'm' : ''}|${o.variables.map((v) => `${v.name}:${declKey(v.type)}`).join(',')}|${o.typed?.key ?? ''}`;
  let env = environments.get(key);
  if (env) return env;
  const objects: Record<string, CelObjectDecl> = { ...BASE_OBJECTS, ...(o.typed?.objects ?? {}) };
  const variables: Record<string, CelTypeDecl> = {
    object: o.typed?.object ?? 'dyn',
    oldObject: o.typed?.object ?? 'dyn',
    request: { object: 'kubernetes.AdmissionRequest' },
    namespaceObject: { object: 'kubernetes.Namespace' },
  };
  if (o.params) variables.params = o.typed?.params ?? 'dyn';
  if (o.authorizer) variables.authorizer = { object: 'kubernetes.authorization.Authorizer' };
  const fields: Record<string, CelTypeDecl> = {};
  for (const v of o.variables) fields[v.name] = v.type;
  objects['kubernetes.variables'] = { fields };
  variables.variables = { object: 'kubernetes.variables' };
  if (o.mutating) variables.jsonpatch = 'dyn';
  env = celEnvironment({
    name: `admission policy ${key}`,
    variables,
    objects,
    libraries: ['strings', 'k8s'],
    funcs: o.mutating ? mutatingFuncs : authzFuncs,
    ...(o.mutating ? { constructible: ['Object', 'JSONPatch'] } : {}),
  });
  if (environments.size >= MAX_ENVIRONMENTS) environments.delete(environments.keys().next().value!);
  environments.set(key, env);
  return env;
}

/** The declaration of a compiled expression's type (scalars, lists and maps of them; dyn otherwise). */
export function declOf(t: CelType, objects?: Record<string, CelObjectDecl>): CelTypeDecl {
  if (t.kind === 'list') return { list: declOf(t.element, objects) };
  if (t.kind === 'map') {
    const key = t.key.name;
    return { map: declOf(t.value, objects), key: key === 'int' || key === 'uint' || key === 'bool' ? key : 'string' };
  }
  if (t.kind === 'object') return objects?.[t.name] || BASE_OBJECTS[t.name] ? { object: t.name } : 'dyn';
  switch (t.name) {
    case 'bool':
    case 'int':
    case 'uint':
    case 'double':
    case 'string':
    case 'bytes':
      return t.name;
    case 'null_type':
      return 'null';
    default:
      return 'dyn';
  }
}

/** What an expression must evaluate to: upstream's return types per expression kind. */
export type ReturnTypes = 'bool' | 'string' | 'string-or-null' | 'object' | 'patches' | 'any';

/**
 * Compiles an expression in an environment and checks its type; throws CelCompileError whose message
 * is upstream's detail (`compilation failed: ERROR: <input>:...`, `must evaluate to bool`).
 */
export function compilePolicyExpression(env: CelEnvironment, expression: string, returns: ReturnTypes): CompiledExpression {
  const c = compile(env, expression);
  const t = c.resultTypeName;
  switch (returns) {
    case 'bool':
      if (t !== 'bool') throw new CelCompileError('must evaluate to bool');
      break;
    case 'string':
      if (t !== 'string') throw new CelCompileError('must evaluate to string');
      break;
    case 'object':
      if (c.resultType.kind !== 'map' && t !== 'dyn') throw new CelCompileError(`must evaluate to Object`);
      break;
    case 'patches':
      if (c.resultType.kind !== 'list' && t !== 'dyn') throw new CelCompileError(`must evaluate to list(JSONPatch)`);
      break;
    case 'string-or-null':
      if (t !== 'string' && t !== 'null_type') throw new CelCompileError('must evaluate to one of [string null_type]');
      break;
  }
  return c;
}

/**
 * Compiles a policy's variables in order (each sees the ones before it) and returns their
 * declarations; a variable that does not compile is declared dyn (its error is reported where it is
 * validated) so later expressions still compile.
 */
export function variableDecls(
  base: Omit<PolicyEnvironmentOptions, 'variables'>,
  variables: readonly { name?: string; expression?: string }[],
  onError?: (index: number, e: CelCompileError) => void,
): VariableDecl[] {
  const decls: VariableDecl[] = [];
  variables.forEach((v, i) => {
    const name = v.name ?? '';
    let type: CelTypeDecl = 'dyn';
    if ((v.expression ?? '').trim()) {
      try {
        const c = compilePolicyExpression(policyEnvironment({ ...base, variables: decls }), v.expression!, 'any');
        type = declOf(c.resultType, base.typed?.objects);
      } catch (e) {
        if (!(e instanceof CelCompileError)) throw e;
        onError?.(i, e);
      }
    }
    if (name) decls.push({ name, type });
  });
  return decls;
}

// ---------------------------------------------------------------------------------------------
// The authorizer library

const AUTHZ = '@authz';

type AuthzState =
  | { k: 'authorizer'; user: UserInfo }
  | { k: 'group'; user: UserInfo; group: string }
  | { k: 'resource'; user: UserInfo; group: string; resource: string; subresource: string; namespace: string; name: string }
  | { k: 'path'; user: UserInfo; path: string }
  | { k: 'decision'; allowed: boolean; reason: string; error: string };

/** One evaluation's authorizer: the request's user, the answers so far and the questions pending. */
export class AuthzSession {
  readonly answers = new Map<string, AuthorizerDecision>();
  readonly pending = new Map<string, Promise<AuthorizerDecision>>();

  constructor(readonly authorizer: Authorizer | undefined) {}

  decide(a: Attributes): AuthorizerDecision {
    const key = JSON.stringify([a.user.username, a.user.uid ?? '', a.user.groups, a.user.extra ?? {}, a.verb, a.isResourceRequest, a.path, a.namespace, a.apiGroup, a.resource, a.subresource, a.name]);
    const known = this.answers.get(key);
    if (known) return known;
    if (!this.authorizer) return { decision: 'no-opinion', reason: 'no authorizer' };
    const r = this.authorizer.authorize(a);
    if (!isPromise(r)) {
      this.answers.set(key, r);
      return r;
    }
    if (!this.pending.has(key))
      this.pending.set(
        key,
        r.then(
          (d) => d,
          (e: unknown) => ({ decision: 'no-opinion', reason: '', error: (e as Error).message }) as AuthorizerDecision,
        ),
      );
    throw new Error('authorization check pending');
  }

  /** Waits for the pending questions; true when there were any (evaluate again). */
  async settle(): Promise<boolean> {
    if (this.pending.size === 0) return false;
    const entries = [...this.pending];
    this.pending.clear();
    for (const [k, p] of entries) this.answers.set(k, await p);
    return true;
  }
}

let currentSession: AuthzSession | undefined;

/** Runs `fn` with `session` answering the authorizer library's checks. */
export function withAuthz<T>(session: AuthzSession, fn: () => T): T {
  const prev = currentSession;
  currentSession = session;
  try {
    return fn();
  } finally {
    currentSession = prev;
  }
}

const authzValue = (st: AuthzState): Map<string, unknown> => {
  return new Map<string, unknown>([[AUTHZ, JSON.stringify(st)]]);
};

/** The `authorizer` variable for a request: the user's authorizer, with requestResource naming the request. */
export function authorizerValue(user: UserInfo, req: { group: string; resource: string; subresource: string; namespace: string; name: string }): Map<string, unknown> {
  const m = authzValue({ k: 'authorizer', user });
  m.set('requestResource', authzValue({ k: 'resource', user, group: req.group, resource: req.resource, subresource: req.subresource, namespace: req.namespace, name: req.name }));
  return m;
}

function stateOf(v: unknown): AuthzState {
  const lib = celLib();
  if (lib.isCelMap(v)) {
    const s = (v as unknown as { get(k: string): unknown }).get(AUTHZ);
    if (typeof s === 'string') return JSON.parse(s) as AuthzState;
  }
  throw new Error('no such overload');
}

function serviceAccountUser(namespace: string, name: string): UserInfo {
  return { username: `system:serviceaccount:${namespace}:${name}`, groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'] };
}

function check(st: AuthzState, verb: string): AuthzState {
  const session = currentSession;
  if (!session) throw new Error('no authorizer in this context');
  let a: Attributes;
  if (st.k === 'path') {
    a = { user: st.user, verb, isResourceRequest: false, path: st.path, namespace: '', apiGroup: '', apiVersion: '', resource: '', subresource: '', name: '' };
  } else if (st.k === 'resource') {
    a = { user: st.user, verb, isResourceRequest: true, path: '', namespace: st.namespace, apiGroup: canonicalSpelling(st.group), apiVersion: '*', resource: st.resource, subresource: st.subresource, name: st.name };
  } else throw new Error('no such overload');
  const d = session.decide(a);
  return { k: 'decision', allowed: d.decision === 'allow', reason: d.reason ?? '', error: d.error ?? '' };
}

let funcs: CelFunc[] | undefined;

/** upstream's authorizer library: authorizer.group(g).resource(r)...check(verb).allowed() and friends. */
export function authzFuncs(): readonly CelFunc[] {
  if (funcs) return funcs;
  const { celMethod, CelScalar } = celLib();
  const D = CelScalar.DYN;
  const S = CelScalar.STRING;
  const resourceSetter = (field: 'subresource' | 'namespace' | 'name') =>
    celMethod(field, D, [S], D, function (x) {
      const st = stateOf(this);
      if (st.k !== 'resource') throw new Error('no such overload');
      return authzValue({ ...st, [field]: x }) as never;
    });
  funcs = [
    celMethod('path', D, [S], D, function (p) {
      const st = stateOf(this);
      if (st.k !== 'authorizer') throw new Error('no such overload');
      return authzValue({ k: 'path', user: st.user, path: p }) as never;
    }),
    celMethod('group', D, [S], D, function (g) {
      const st = stateOf(this);
      if (st.k !== 'authorizer') throw new Error('no such overload');
      return authzValue({ k: 'group', user: st.user, group: g }) as never;
    }),
    celMethod('serviceAccount', D, [S, S], D, function (ns, name) {
      const st = stateOf(this);
      if (st.k !== 'authorizer') throw new Error('no such overload');
      return authzValue({ k: 'authorizer', user: serviceAccountUser(ns, name) }) as never;
    }),
    celMethod('resource', D, [S], D, function (r) {
      const st = stateOf(this);
      if (st.k !== 'group') throw new Error('no such overload');
      return authzValue({ k: 'resource', user: st.user, group: st.group, resource: r, subresource: '', namespace: '', name: '' }) as never;
    }),
    resourceSetter('subresource'),
    resourceSetter('namespace'),
    resourceSetter('name'),
    celMethod('check', D, [S], D, function (verb) {
      return authzValue(check(stateOf(this), verb)) as never;
    }),
    celMethod('allowed', D, [], CelScalar.BOOL, function () {
      const st = stateOf(this);
      if (st.k !== 'decision') throw new Error('no such overload');
      return st.allowed;
    }),
    celMethod('reason', D, [], S, function () {
      const st = stateOf(this);
      if (st.k !== 'decision') throw new Error('no such overload');
      return st.reason;
    }),
    celMethod('errored', D, [], CelScalar.BOOL, function () {
      const st = stateOf(this);
      if (st.k !== 'decision') throw new Error('no such overload');
      return st.error !== '';
    }),
    celMethod('error', D, [], S, function () {
      const st = stateOf(this);
      if (st.k !== 'decision') throw new Error('no such overload');
      return st.error;
    }),
  ];
  return funcs;
}

/** The `jsonpatch` variable's value (its one method is escapeKey). */
export const JSONPATCH_VALUE: ReadonlyMap<string, unknown> = new Map([['@jsonpatch', true]]);

let mfuncs: CelFunc[] | undefined;

/** A mutating policy's functions: the authorizer library and jsonpatch.escapeKey (RFC 6901: ~ as ~0, / as ~1). */
export function mutatingFuncs(): readonly CelFunc[] {
  if (mfuncs) return mfuncs;
  const { celMethod, CelScalar } = celLib();
  mfuncs = [
    ...authzFuncs(),
    celMethod('escapeKey', CelScalar.DYN, [CelScalar.STRING], CelScalar.STRING, function (k) {
      return k.replaceAll('~', '~0').replaceAll('/', '~1');
    }),
  ];
  return mfuncs;
}

/** A CEL result as JSON: maps as objects, ints as numbers, lists as arrays. */
export function celToJson(v: unknown): JsonValue {
  const lib = celLib();
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') return v;
  if (lib.isCelUint(v)) return Number((v as { value: bigint }).value);
  if (lib.isCelList(v)) return [...(v as Iterable<unknown>)].map(celToJson);
  if (lib.isCelMap(v) || v instanceof Map) {
    const out: Record<string, JsonValue> = {};
    for (const [k, x] of v as ReadonlyMap<unknown, unknown>) out[String(k)] = celToJson(x);
    return out;
  }
  if (Array.isArray(v)) return v.map(celToJson);
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  return String(v) as JsonValue;
}

