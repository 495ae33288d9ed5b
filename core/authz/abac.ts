/**
 * ABAC (--authorization-mode=ABAC, --authorization-policy-file): upstream's attribute-based policy
 * file, one JSON object per line (blank lines and `#` comments skipped), each line either versioned
 *   {"apiVersion": "abac.authorization.svc.io/v1beta1", "kind": "Policy", "spec": {...}}
 * (upstream's `abac.authorization.kubernetes.io` spelling accepted too) or legacy unversioned (v0):
 *   {"user": "alice", "readonly": true, "resource": "configmaps", "namespace": "ns"}
 * converted to v1beta1 as upstream converts it. A line that does not parse is a start error naming
 * the file and the line. A request is allowed when any policy matches its subject, verb (readonly
 * policies allow get/list/watch only), and resource or non-resource path; otherwise no opinion.
 */
import { readFileSync } from 'node:fs';
import type { UserInfo } from '../api/types.js';
import { goJsonSyntaxError } from '../codec/json-syntax.js';
import { type Attributes, type Authorizer, type AuthorizerDecision, isReadOnly, type RulesResult } from './authorizer.js';

export class PolicyFileError extends Error {}

export interface AbacPolicy {
  user: string;
  group: string;
  readonly: boolean;
  apiGroup: string;
  resource: string;
  namespace: string;
  nonResourcePath: string;
}

const ABAC_GROUPS = ['abac.authorization.svc.io', 'abac.authorization.kubernetes.io'];
const AUTHENTICATED = 'system:authenticated';

type Json = Record<string, unknown>;

/** The fields of a policy spec and their Go types; anything else is ignored (upstream's decoding is not strict). */
const v1beta1Fields: Record<string, 'string' | 'bool'> = {
  user: 'string',
  group: 'string',
  readonly: 'bool',
  apiGroup: 'string',
  resource: 'string',
  namespace: 'string',
  nonResourcePath: 'string',
};
const v0Fields: Record<string, 'string' | 'bool'> = { user: 'string', group: 'string', readonly: 'bool', resource: 'string', namespace: 'string' };

const jsonType = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v === 'boolean' ? 'bool' : typeof v);

/** Reads typed fields the way Go's json decoder fills a struct: wrong types are errors worded as Go words them. */
function readFields(o: Json, fields: Record<string, 'string' | 'bool'>, struct: string, prefix: string): Partial<AbacPolicy> {
  const out: Record<string, unknown> = {};
  for (const [k, type] of Object.entries(fields)) {
    const v = o[k];
    if (v === undefined || v === null) continue;
    const got = jsonType(v);
    if (got !== type) throw new Error(`json: cannot unmarshal ${got} into Go struct field ${struct}.${prefix}${k} of type ${type}`);
    out[k] = v;
  }
  return out as Partial<AbacPolicy>;
}

const policy = (p: Partial<AbacPolicy>): AbacPolicy => ({
  user: p.user ?? '',
  group: p.group ?? '',
  readonly: p.readonly ?? false,
  apiGroup: p.apiGroup ?? '',
  resource: p.resource ?? '',
  namespace: p.namespace ?? '',
  nonResourcePath: p.nonResourcePath ?? '',
});

/** v1beta1: `*` as user or group means every authenticated subject. */
function fromV1beta1(spec: Partial<AbacPolicy>): AbacPolicy {
  const p = policy(spec);
  if (p.user === '*' || p.group === '*') {
    p.group = AUTHENTICATED;
    p.user = '';
  }
  return p;
}

/** v0 (unversioned): empty means "all" for subject, namespace and resource; every API group matches. */
function fromV0(v0: Partial<AbacPolicy>): AbacPolicy {
  const p = policy(v0);
  if (!p.user && !p.group) p.group = AUTHENTICATED;
  if (p.user === '*' || p.group === '*') {
    p.group = AUTHENTICATED;
    p.user = '';
  }
  const blankNamespace = !p.namespace;
  const blankResource = !p.resource;
  if (blankNamespace) p.namespace = '*';
  if (blankResource) p.resource = '*';
  p.apiGroup = '*';
  if (blankNamespace && blankResource) p.nonResourcePath = '*';
  return p;
}

/** One line of the file as a policy; throws the decoder's error text. */
function parseLine(line: string): AbacPolicy {
  let o: unknown;
  try {
    o = JSON.parse(line);
  } catch (e) {
    throw new Error(goJsonSyntaxError(Buffer.from(line)) ?? (e as Error).message);
  }
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new Error(`json: cannot unmarshal ${jsonType(o)} into Go value of type abac.Policy`);
  const obj = o as Json;
  const apiVersion = obj.apiVersion;
  const kind = obj.kind;
  if (apiVersion !== undefined && typeof apiVersion !== 'string') throw new Error(`json: cannot unmarshal ${jsonType(apiVersion)} into Go struct field TypeMeta.apiVersion of type string`);
  if (kind !== undefined && typeof kind !== 'string') throw new Error(`json: cannot unmarshal ${jsonType(kind)} into Go struct field TypeMeta.kind of type string`);
  // no apiVersion: the legacy unversioned format (upstream migrates such lines as v0)
  if (!apiVersion) return fromV0(readFields(obj, v0Fields, 'Policy', ''));
  if (!kind) throw new Error(`Object 'Kind' is missing in '${line}'`);
  const slash = apiVersion.lastIndexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  const version = apiVersion.slice(slash + 1);
  if (!ABAC_GROUPS.includes(group) || (version !== 'v1beta1' && version !== 'v0') || kind !== 'Policy') {
    throw new Error(`no kind ${JSON.stringify(kind)} is registered for version ${JSON.stringify(apiVersion)}`);
  }
  if (version === 'v0') return fromV0(readFields(obj, v0Fields, 'Policy', ''));
  const spec = obj.spec ?? {};
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) throw new Error(`json: cannot unmarshal ${jsonType(spec)} into Go struct field Policy.spec of type v1beta1.PolicySpec`);
  return fromV1beta1(readFields(spec as Json, v1beta1Fields, 'Policy', 'spec.'));
}

/** Parses a policy file's text; errors name the file, the line number and the line. */
export function parsePolicyFile(text: string, path: string): AbacPolicy[] {
  const out: AbacPolicy[] = [];
  let unversioned = 0;
  text.split(/\r?\n/).forEach((line, i) => {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    try {
      const p = parseLine(line);
      if (!/"apiVersion"\s*:/.test(line)) unversioned++;
      out.push(p);
    } catch (e) {
      throw new PolicyFileError(`error reading policy file ${path}, line ${i + 1}: ${line}: ${(e as Error).message}`);
    }
  });
  if (unversioned > 0) console.warn(`svc-apiserver: policy file ${path} contained unversioned rules (converted from the legacy v0 format)`);
  return out;
}

export function loadPolicyFile(path: string): AbacPolicy[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new PolicyFileError(`error reading policy file ${path}: ${(e as Error).message}`);
  }
  return parsePolicyFile(text, path);
}

/** Whether the policy names this user (by name or a group); `*` matches anyone. */
function subjectMatches(p: AbacPolicy, user: UserInfo): boolean {
  let matched = false;
  if (p.user) {
    if (p.user !== '*' && p.user !== user.username) return false;
    matched = true;
  }
  if (p.group) {
    if (p.group !== '*' && !user.groups.includes(p.group)) return false;
    matched = true;
  }
  return matched;
}

function resourceMatches(p: AbacPolicy, a: Attributes): boolean {
  return (
    a.isResourceRequest &&
    (p.namespace === '*' || p.namespace === a.namespace) &&
    (p.resource === '*' || p.resource === a.resource) &&
    (p.apiGroup === '*' || p.apiGroup === a.apiGroup)
  );
}

function nonResourceMatches(p: AbacPolicy, a: Attributes): boolean {
  if (a.isResourceRequest) return false;
  const path = p.nonResourcePath;
  if (path === '*' || path === a.path) return true;
  return path.endsWith('*') && a.path.startsWith(path.replace(/\*+$/, ''));
}

export function matches(p: AbacPolicy, a: Attributes): boolean {
  if (!subjectMatches(p, a.user)) return false;
  if (p.readonly && !isReadOnly(a)) return false;
  return resourceMatches(p, a) || nonResourceMatches(p, a);
}

const verbsOf = (readonly: boolean): string[] => (readonly ? ['get', 'list', 'watch'] : ['*']);

export function abacAuthorizer(policies: readonly AbacPolicy[]): Authorizer {
  const allow: AuthorizerDecision = { decision: 'allow', reason: '' };
  const none: AuthorizerDecision = { decision: 'no-opinion', reason: 'No policy matched.' };
  return {
    name: 'ABAC',
    authorize: (a) => (policies.some((p) => matches(p, a)) ? allow : none),
    rulesFor: (user, namespace) => {
      const out: RulesResult = { resourceRules: [], nonResourceRules: [], incomplete: false };
      for (const p of policies) {
        if (!subjectMatches(p, user) || (p.namespace !== '*' && p.namespace !== namespace)) continue;
        if (p.resource) out.resourceRules.push({ verbs: verbsOf(p.readonly), apiGroups: [p.apiGroup], resources: [p.resource] });
        if (p.nonResourcePath) out.nonResourceRules.push({ verbs: verbsOf(p.readonly), nonResourceURLs: [p.nonResourcePath] });
      }
      return out;
    },
  };
}
