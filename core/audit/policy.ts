/**
 * The audit policy (--audit-policy-file): an audit.svc.io/v1 Policy (audit.k8s.io/v1 as upstream
 * tooling writes it is read the same), YAML or JSON. Rules are tried in order; the first that matches
 * a request gives its level (None, Metadata, Request, RequestResponse), the stages left out (the
 * policy's omitStages joined with the rule's) and whether managedFields are dropped from logged
 * objects (the rule's omitManagedFields, else the policy's). No rule matching means None, as upstream.
 *
 * A malformed file is a start error naming the field (`rules[2].level: Unsupported value: ...`),
 * worded as upstream's validation; fields the schema does not know are warned about and ignored, as
 * upstream falls back to lenient decoding.
 */
import { readFileSync } from 'node:fs';
import { StartError } from '../api/start-error.js';
import { decodeYaml } from '../codec/yaml.js';
import { isDNS1123Subdomain } from '../api/validation.js';
import type { UserInfo } from '../api/types.js';
import type { RequestInfo } from '../request/request-info.js';

export type Level = 'None' | 'Metadata' | 'Request' | 'RequestResponse';
export type Stage = 'RequestReceived' | 'ResponseStarted' | 'ResponseComplete' | 'Panic';

export const levels: readonly Level[] = ['None', 'Metadata', 'Request', 'RequestResponse'];
export const stages: readonly Stage[] = ['RequestReceived', 'ResponseStarted', 'ResponseComplete', 'Panic'];

/** The API versions a policy file may name. */
export const policyApiVersions = ['audit.svc.io/v1', 'audit.k8s.io/v1'];

/** Level rank, so `atLeast(level, 'Request')` reads as upstream's `!level.Less(LevelRequest)`. */
const rank: Readonly<Record<Level, number>> = { None: 0, Metadata: 1, Request: 2, RequestResponse: 3 };
export const atLeast = (level: Level, min: Level): boolean => rank[level] >= rank[min];

export class PolicyError extends StartError {}

/** What the policy decides for one request. */
export interface RequestAuditConfig {
  readonly level: Level;
  readonly omitStages: ReadonlySet<Stage>;
  readonly omitManagedFields: boolean;
}

interface GroupResources {
  group: string;
  resources: readonly string[];
  resourceNames: ReadonlySet<string> | undefined;
}

/** One rule, its lists as sets (empty list: matches anything) and its outcome precomputed. */
interface Rule {
  users: ReadonlySet<string> | undefined;
  userGroups: ReadonlySet<string> | undefined;
  verbs: ReadonlySet<string> | undefined;
  namespaces: ReadonlySet<string> | undefined;
  resources: readonly GroupResources[] | undefined;
  nonResourceURLs: readonly string[] | undefined;
  config: RequestAuditConfig;
}

/** What rules match on: the request's user and request info. */
export interface AuditAttributes {
  user: UserInfo | undefined;
  info: RequestInfo;
  path: string;
}

export class Policy {
  /** The outcome when no rule matches. */
  private readonly fallback: RequestAuditConfig;

  constructor(
    private readonly rules: readonly Rule[],
    policyOmitStages: ReadonlySet<Stage>,
    policyOmitManagedFields: boolean,
  ) {
    this.fallback = { level: 'None', omitStages: policyOmitStages, omitManagedFields: policyOmitManagedFields };
  }

  evaluate(a: AuditAttributes): RequestAuditConfig {
    for (const r of this.rules) if (ruleMatches(r, a)) return r.config;
    return this.fallback;
  }
}

function ruleMatches(r: Rule, a: AuditAttributes): boolean {
  const user = a.user;
  if (r.users && (!user || !r.users.has(user.username))) return false;
  if (r.userGroups) {
    if (!user || !user.groups.some((g) => r.userGroups!.has(g))) return false;
  }
  if (r.verbs && !r.verbs.has(a.info.verb)) return false;
  if (r.namespaces || r.resources) return resourceMatches(r, a.info);
  if (r.nonResourceURLs) return !a.info.isResourceRequest && r.nonResourceURLs.some((spec) => pathMatches(a.path, spec));
  return true;
}

/** `*` matches every path, a trailing `*` a prefix, anything else the path exactly. */
function pathMatches(path: string, spec: string): boolean {
  if (spec === '*' || spec === path) return true;
  return spec.endsWith('*') && path.startsWith(spec.replace(/\*+$/, ''));
}

function resourceMatches(r: Rule, info: RequestInfo): boolean {
  if (!info.isResourceRequest) return false;
  if (r.namespaces && !r.namespaces.has(info.namespace)) return false;
  if (!r.resources) return true;
  const { resource, subresource, name } = info;
  const combined = subresource ? `${resource}/${subresource}` : resource;
  for (const gr of r.resources) {
    if (gr.group !== info.apiGroup) continue;
    if (gr.resources.length === 0) return true;
    if (gr.resourceNames && !gr.resourceNames.has(name)) continue;
    for (const res of gr.resources) {
      if (res === combined || res === '*') return true;
      if (subresource && res.startsWith('*/') && res.slice(2) === subresource) return true;
      if (res.endsWith('/*') && res.slice(0, -2) === resource) return true;
    }
  }
  return false;
}

// ---- reading and checking a policy file ----

type Obj = Record<string, unknown>;

const policyFields = new Set(['apiVersion', 'kind', 'metadata', 'rules', 'omitStages', 'omitManagedFields']);
const ruleFields = new Set(['level', 'users', 'userGroups', 'verbs', 'resources', 'namespaces', 'nonResourceURLs', 'omitStages', 'omitManagedFields']);
const groupResourceFields = new Set(['group', 'resources', 'resourceNames']);

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const quoted = (v: unknown): string => JSON.stringify(v);

/** Decoding errors: a field of the wrong type, named by its path. */
function typeError(path: string, want: string, got: unknown): PolicyError {
  const kind = Array.isArray(got) ? 'array' : got === null ? 'null' : typeof got;
  return new PolicyError(`failed decoding: ${path}: expected ${want}, got ${kind}`);
}

function stringList(v: unknown, path: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw typeError(path, 'a list of strings', v);
  v.forEach((x, i) => {
    if (typeof x !== 'string') throw typeError(`${path}[${i}]`, 'string', x);
  });
  return v as string[];
}

function optionalBool(v: unknown, path: string): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw typeError(path, 'boolean', v);
  return v;
}

function unknownFields(o: Obj, known: ReadonlySet<string>, path: string, out: string[]): void {
  for (const k of Object.keys(o)) if (!known.has(k)) out.push(path ? `${path}.${k}` : k);
}

/** Upstream's field.Error wording. */
const invalid = (path: string, value: unknown, detail: string): string => `${path}: Invalid value: ${quoted(value)}: ${detail}`;

function checkStages(list: string[] | undefined, path: string, errs: string[]): Stage[] {
  const out: Stage[] = [];
  (list ?? []).forEach((s, i) => {
    if ((stages as readonly string[]).includes(s)) out.push(s as Stage);
    else errs.push(invalid(`${path}[${i}]`, s, `allowed stages are ${stages.join(',')}`));
  });
  return out;
}

function checkLevel(v: unknown, path: string, errs: string[]): Level {
  if (v === undefined || v === null || v === '') {
    errs.push(`${path}: Required value`);
    return 'None';
  }
  if (typeof v !== 'string') throw typeError(path, 'string', v);
  if (!(levels as readonly string[]).includes(v)) errs.push(`${path}: Unsupported value: ${quoted(v)}: supported values: ${levels.map(quoted).join(', ')}`);
  return v as Level;
}

function checkNonResourceURLs(urls: string[] | undefined, path: string, errs: string[]): void {
  (urls ?? []).forEach((u, i) => {
    if (u === '*') return;
    if (!u.startsWith('/')) errs.push(invalid(`${path}[${i}]`, u, "non-resource URL rules must begin with a '/' character"));
    if (u !== '' && u.slice(0, -1).includes('*')) errs.push(invalid(`${path}[${i}]`, u, "non-resource URL wildcards '*' must be the final character of the rule"));
  });
}

function readGroupResources(v: unknown, path: string, errs: string[], unknown: string[]): GroupResources[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw typeError(path, 'a list of group resources', v);
  return v.map((g, i) => {
    const p = `${path}[${i}]`;
    if (!isObject(g)) throw typeError(p, 'object', g);
    unknownFields(g, groupResourceFields, p, unknown);
    const group = g.group ?? '';
    if (typeof group !== 'string') throw typeError(`${p}.group`, 'string', group);
    const resources = stringList(g.resources, `${p}.resources`) ?? [];
    const names = stringList(g.resourceNames, `${p}.resourceNames`);
    if (group) {
      const msgs = isDNS1123Subdomain(group);
      if (msgs.length) errs.push(invalid(`${p}.group`, group, msgs.join(',')));
    }
    if (names?.length && resources.length === 0) errs.push(invalid(`${p}.resourceNames`, names, 'using resourceNames requires at least one resource'));
    return { group, resources, resourceNames: names?.length ? new Set(names) : undefined };
  });
}

const setOf = (list: readonly string[] | undefined): ReadonlySet<string> | undefined => (list?.length ? new Set(list) : undefined);

function readRule(v: unknown, i: number, policyStages: readonly Stage[], policyOmitManagedFields: boolean, errs: string[], unknown: string[]): Rule {
  const path = `rules[${i}]`;
  if (!isObject(v)) throw typeError(path, 'object', v);
  unknownFields(v, ruleFields, path, unknown);
  const level = checkLevel(v.level, `${path}.level`, errs);
  const users = stringList(v.users, `${path}.users`);
  const userGroups = stringList(v.userGroups, `${path}.userGroups`);
  const verbs = stringList(v.verbs, `${path}.verbs`);
  const namespaces = stringList(v.namespaces, `${path}.namespaces`);
  const nonResourceURLs = stringList(v.nonResourceURLs, `${path}.nonResourceURLs`);
  checkNonResourceURLs(nonResourceURLs, `${path}.nonResourceURLs`, errs);
  const resources = readGroupResources(v.resources, `${path}.resources`, errs, unknown);
  const omit = checkStages(stringList(v.omitStages, `${path}.omitStages`), `${path}.omitStages`, errs);
  const omitManagedFields = optionalBool(v.omitManagedFields, `${path}.omitManagedFields`);
  if (nonResourceURLs?.length && (resources?.length || namespaces?.length)) {
    errs.push(invalid(`${path}.nonResourceURLs`, nonResourceURLs, 'rules cannot apply to both regular resources and non-resource URLs'));
  }
  return {
    users: setOf(users),
    userGroups: setOf(userGroups),
    verbs: setOf(verbs),
    namespaces: namespaces?.length ? new Set(namespaces) : undefined,
    resources: resources?.length ? resources : undefined,
    nonResourceURLs: nonResourceURLs?.length ? nonResourceURLs : undefined,
    config: { level, omitStages: new Set([...policyStages, ...omit]), omitManagedFields: omitManagedFields ?? policyOmitManagedFields },
  };
}

/** Parses and checks a policy document; PolicyError names the first bad field(s). `warn` gets ignored fields. */
export function parsePolicy(text: string, warn: (msg: string) => void = () => undefined): Policy {
  let doc: unknown;
  try {
    doc = decodeYaml(text).value;
  } catch (e) {
    throw new PolicyError(`failed decoding: ${(e as Error).message}`);
  }
  if (!isObject(doc)) throw new PolicyError('failed decoding: the policy is not an object');
  if (doc.kind !== 'Policy') throw new PolicyError(`failed decoding: kind: Unsupported value: ${quoted(doc.kind ?? '')}: supported values: "Policy"`);
  if (typeof doc.apiVersion !== 'string' || !policyApiVersions.includes(doc.apiVersion)) {
    throw new PolicyError(`failed decoding: apiVersion: Unsupported value: ${quoted(doc.apiVersion ?? '')}: supported values: ${policyApiVersions.map(quoted).join(', ')}`);
  }
  const unknown: string[] = [];
  unknownFields(doc, policyFields, '', unknown);
  const errs: string[] = [];
  const policyStages = checkStages(stringList(doc.omitStages, 'omitStages'), 'omitStages', errs);
  const policyOmitManagedFields = optionalBool(doc.omitManagedFields, 'omitManagedFields') ?? false;
  if (doc.rules !== undefined && doc.rules !== null && !Array.isArray(doc.rules)) throw typeError('rules', 'a list of rules', doc.rules);
  const rawRules = (doc.rules ?? []) as unknown[];
  const rules = rawRules.map((r, i) => readRule(r, i, policyStages, policyOmitManagedFields, errs, unknown));
  if (errs.length) throw new PolicyError(`validation failed: ${errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`}`);
  if (rules.length === 0) throw new PolicyError('loaded illegal policy with 0 rules');
  if (unknown.length) warn(`audit policy contains unknown fields, ignored: ${unknown.join(', ')}`);
  return new Policy(rules, new Set(policyStages), policyOmitManagedFields);
}

/** Reads --audit-policy-file; errors name the flag and the file. */
export function loadPolicyFile(file: string, warn?: (msg: string) => void): Policy {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new PolicyError(`--audit-policy-file: failed to read file path ${quoted(file)}: ${(e as Error).message}`);
  }
  try {
    return parsePolicy(text, warn);
  } catch (e) {
    if (e instanceof PolicyError) throw new PolicyError(`--audit-policy-file ${file}: ${e.message}`);
    throw e;
  }
}
