/**
 * Validation of a CustomResourceDefinition, as upstream's apiextensions validation: names (the object
 * name is `<plural>.<group>`, DNS labels, kind and listKind), group (a domain with a dot, not a group
 * the server's built-in kinds are served in, approval for the protected `svc.io` groups), scope,
 * versions (unique DNS labels, exactly one storage version, deprecation warnings), per-version schemas
 * (OpenAPI v3 restricted to what is structural: types everywhere, value validations without types,
 * metadata restricted to name and generateName, the x-kubernetes-* extensions used consistently,
 * defaults that are pruned and valid, CEL rules that compile and stay within the cost limits),
 * subresources, printer columns, selectable fields, conversion, and status (accepted names, stored
 * versions). Messages are upstream's.
 */
import { type FieldError, fieldErrors, FieldPath, GoLiteral } from '../api/field-errors.js';
import { isDNS1035Label, isDNS1123Subdomain, isPrintRune, jsonEqual } from '../api/validation.js';
import { cardinalityOf, CelCompileError, compileRule, costErrorMessage, STATIC_ESTIMATED_COST_LIMIT, STATIC_ESTIMATED_CRD_COST_LIMIT, staticCost, evaluateRules } from '../schema/cel.js';
import { applyDefaults } from '../schema/defaults.js';
import { convert, type OpenApiV3Schema } from '../schema/openapi-v3.js';
import type { Schema } from '../schema/schema.js';
import { decodeStructural } from '../schema/structural.js';
import { validateValues } from '../schema/values.js';
import { JsonPathError, parseJsonPath } from './jsonpath.js';
import { API_APPROVED_ANNOTATION, type CRDNames, type CRDVersion, type CustomResourceDefinition, isConditionTrue } from './types.js';

const printerColumnTypes = ['boolean', 'date', 'integer', 'number', 'string'];
const printerColumnFormats = ['byte', 'date', 'date-time', 'double', 'float', 'int32', 'int64', 'password'];
const openApiTypes = ['array', 'boolean', 'integer', 'number', 'object', 'string'];
const reasons = ['FieldValueDuplicate', 'FieldValueForbidden', 'FieldValueInvalid', 'FieldValueRequired'];
const MAX_SELECTABLE_FIELDS = 8;
const metaFields = new Set(['metadata', 'kind', 'apiVersion']);
const allowedAtRootWithStatus = new Set([
  'description', 'type', 'format', 'title', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'maxLength', 'minLength', 'pattern',
  'maxItems', 'minItems', 'uniqueItems', 'multipleOf', 'required', 'items', 'properties', 'externalDocs', 'example', 'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-validations',
]);

const dns1035 = (path: FieldPath | string, value: string): FieldError[] => {
  const e = isDNS1035Label(value);
  return e.length ? [fieldErrors.invalid(path, value, e.join(','))] : [];
};

export interface CrdValidationContext {
  /** Groups served by built-in kinds: a definition may not add resources to them. */
  builtinGroups: ReadonlySet<string>;
}

/** Whether the group is one of the protected `svc.io` groups (upstream: `k8s.io`, `kubernetes.io`). */
export const isProtectedGroup = (g: string): boolean => g === 'svc.io' || g.endsWith('.svc.io');

export function validateCreate(crd: CustomResourceDefinition, ctx: CrdValidationContext): FieldError[] {
  const errs: FieldError[] = [];
  errs.push(...validateName(crd));
  errs.push(...validateSpec(crd, ctx, { allowInvalidCABundle: true }));
  errs.push(...validateStatus(crd));
  errs.push(...validateStoredVersions(crd));
  errs.push(...validateApproval(crd, undefined));
  return errs;
}

export function validateUpdate(crd: CustomResourceDefinition, old: CustomResourceDefinition, ctx: CrdValidationContext): FieldError[] {
  const errs: FieldError[] = [];
  errs.push(...validateName(crd));
  errs.push(...validateSpec(crd, ctx, { allowInvalidCABundle: !isConditionTrue(old, 'Established'), old }));
  if (crd.spec.group !== old.spec.group) errs.push(fieldErrors.invalid('spec.group', crd.spec.group, 'field is immutable'));
  if (crd.spec.names?.plural !== old.spec.names?.plural) errs.push(fieldErrors.invalid('spec.names.plural', crd.spec.names?.plural, 'field is immutable'));
  errs.push(...validateStatus(crd));
  errs.push(...validateStoredVersions(crd));
  errs.push(...validateApproval(crd, old));
  return errs;
}

/** The status subresource's checks: accepted names and stored versions. */
export function validateStatusUpdate(crd: CustomResourceDefinition): FieldError[] {
  return [...validateStatus(crd), ...validateStoredVersions(crd)];
}

function validateName(crd: CustomResourceDefinition): FieldError[] {
  const name = crd.metadata.name ?? '';
  const want = `${crd.spec?.names?.plural ?? ''}.${crd.spec?.group ?? ''}`;
  return name && name !== want ? [fieldErrors.invalid('metadata.name', name, 'must be spec.names.plural+"."+spec.group')] : [];
}

function validateApproval(crd: CustomResourceDefinition, old: CustomResourceDefinition | undefined): FieldError[] {
  if (!isProtectedGroup(crd.spec.group ?? '')) return [];
  const path = `metadata.annotations[${API_APPROVED_ANNOTATION}]`;
  const v = crd.metadata.annotations?.[API_APPROVED_ANNOTATION];
  const oldV = old?.metadata.annotations?.[API_APPROVED_ANNOTATION];
  if (v === undefined) {
    // a definition that never had the annotation may keep going without it, as upstream allows
    if (old && oldV === undefined) return [];
    return [fieldErrors.required(path, `protected groups must have approval annotation ${JSON.stringify(API_APPROVED_ANNOTATION)}, see https://github.com/kubernetes/enhancements/pull/1111`)];
  }
  if (v.startsWith('unapproved')) return [];
  try {
    const u = new URL(v);
    if (u.protocol === 'http:' || u.protocol === 'https:') return [];
  } catch {
    // fall through
  }
  return [fieldErrors.invalid(path, v, 'protected groups must have approval annotation "api-approved.svc.io" with either a URL or a reason starting with "unapproved"')];
}

interface SpecOptions {
  allowInvalidCABundle: boolean;
  old?: CustomResourceDefinition;
}

function validateSpec(crd: CustomResourceDefinition, ctx: CrdValidationContext, o: SpecOptions): FieldError[] {
  const spec = crd.spec;
  const errs: FieldError[] = [];
  const group = spec.group ?? '';
  if (!group) errs.push(fieldErrors.required('spec.group'));
  else {
    const bad = isDNS1123Subdomain(group);
    if (bad.length) errs.push(fieldErrors.invalid('spec.group', group, bad.join(',')));
    else if (group.split('.').length < 2) errs.push(fieldErrors.invalid('spec.group', group, 'should be a domain with at least one dot'));
    else if (ctx.builtinGroups.has(group)) errs.push(fieldErrors.forbidden('spec.group', `${JSON.stringify(group)} is served by built-in resources`));
  }
  const scope = spec.scope ?? '';
  if (!scope) errs.push(fieldErrors.required('spec.scope'));
  else if (scope !== 'Cluster' && scope !== 'Namespaced') errs.push(fieldErrors.notSupported('spec.scope', scope, ['Cluster', 'Namespaced']));
  if (spec.preserveUnknownFields) {
    errs.push(fieldErrors.invalid('spec.preserveUnknownFields', true, 'cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead'));
  }

  const versions = spec.versions ?? [];
  const names = new Set<string>();
  let unique = true;
  let storage = 0;
  const unchanged = unchangedSchemas(crd, o.old);
  let totalCost = 0;
  const costs: { path: string; cost: number }[] = [];
  versions.forEach((v, i) => {
    const vp = FieldPath.root('spec').child('versions').index(i);
    if (v.storage) storage++;
    if (names.has(v.name)) unique = false;
    names.add(v.name);
    errs.push(...dns1035(vp.child('name'), v.name ?? ''));
    for (const m of deprecationWarningErrors(v)) errs.push(fieldErrors.invalid(vp.child('deprecationWarning'), v.deprecationWarning ?? null, m));
    const schema = v.schema?.openAPIV3Schema;
    if (!schema) errs.push(fieldErrors.required(vp.child('schema', 'openAPIV3Schema'), 'schemas are required'));
    else {
      const r = validateSchema(schema, vp.child('schema'), !!v.subresources?.status, unchanged.has(v.name));
      errs.push(...r.errors);
      totalCost += r.cost;
      costs.push(...r.costs);
    }
    errs.push(...validateSubresources(v, vp.child('subresources')));
    (v.additionalPrinterColumns ?? []).forEach((c, j) => errs.push(...validateColumn(c, vp.child('additionalPrinterColumns').index(j))));
    if (v.selectableFields?.length) errs.push(...validateSelectableFields(v, vp.child('selectableFields')));
  });
  if (totalCost > STATIC_ESTIMATED_CRD_COST_LIMIT) {
    for (const c of costs.sort((a, b) => b.cost - a.cost).slice(0, 4)) errs.push(fieldErrors.forbidden(c.path, 'contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema'));
    errs.push(fieldErrors.forbidden('spec.versions', costErrorMessage('x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema', totalCost, STATIC_ESTIMATED_CRD_COST_LIMIT)));
  }
  if (!unique) errs.push(fieldErrors.invalid('spec.versions', new GoLiteral(versionsLiteral(versions)), 'must contain unique version names'));
  if (storage !== 1) errs.push(fieldErrors.invalid('spec.versions', new GoLiteral(versionsLiteral(versions)), 'must have exactly one version marked as storage version'));

  const n: Partial<CRDNames> = spec.names ?? {};
  if (!n.plural) errs.push(fieldErrors.required('spec.names.plural'));
  if (!n.singular) errs.push(fieldErrors.required('spec.names.singular'));
  if (!n.kind) errs.push(fieldErrors.required('spec.names.kind'));
  if (!n.listKind) errs.push(fieldErrors.required('spec.names.listKind'));
  errs.push(...validateNames(n, FieldPath.root('spec').child('names')));
  errs.push(...validateConversion(crd, o.allowInvalidCABundle));
  return errs;
}

/** A short Go-like rendering of the versions in "must have exactly one storage version" messages. */
const versionsLiteral = (vs: readonly CRDVersion[]): string =>
  `[]apiextensions.CustomResourceDefinitionVersion{${vs.map((v) => `apiextensions.CustomResourceDefinitionVersion{Name:${JSON.stringify(v.name)}, Served:${!!v.served}, Storage:${!!v.storage}}`).join(', ')}}`;

/** Versions whose schema did not change in this update: their rules' cost is not checked again, as upstream. */
function unchangedSchemas(crd: CustomResourceDefinition, old: CustomResourceDefinition | undefined): Set<string> {
  const out = new Set<string>();
  if (!old) return out;
  for (const v of crd.spec.versions ?? []) {
    const ov = old.spec.versions?.find((x) => x.name === v.name);
    if (ov && jsonEqual(ov.schema, v.schema)) out.add(v.name);
  }
  return out;
}

function deprecationWarningErrors(v: CRDVersion): string[] {
  const w = v.deprecationWarning;
  if (!v.deprecated && w !== undefined) return ['can only be set for deprecated versions'];
  if (w === undefined) return [];
  const out: string[] = [];
  if ([...w].length > 256) out.push('must be <= 256 characters long');
  if (w.length === 0) out.push('must not be an empty string');
  let i = 0;
  for (const ch of w) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
      out.push(`must only contain printable UTF-8 characters; control character found at index ${i}`);
      break;
    }
    if (!isPrintRune(cp)) {
      out.push(`must only contain printable UTF-8 characters; non-printable character found at index ${i}`);
      break;
    }
    i += Buffer.byteLength(ch);
  }
  return out;
}

export function validateNames(n: Partial<CRDNames>, p: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (n.plural) errs.push(...dns1035(p.child('plural'), n.plural));
  if (n.singular) errs.push(...dns1035(p.child('singular'), n.singular));
  for (const [f, v] of [['kind', n.kind], ['listKind', n.listKind]] as const) {
    if (!v) continue;
    const e = isDNS1035Label(v.toLowerCase());
    if (e.length) errs.push(fieldErrors.invalid(p.child(f), v, `may have mixed case, but should otherwise match: ${e.join(',')}`));
  }
  (n.shortNames ?? []).forEach((s, i) => errs.push(...dns1035(p.child('shortNames').index(i), s)));
  if (n.kind && n.kind === n.listKind) errs.push(fieldErrors.invalid(p.child('listKind'), n.listKind, 'kind and listKind may not be the same'));
  (n.categories ?? []).forEach((c, i) => errs.push(...dns1035(p.child('categories').index(i), c)));
  return errs;
}

function validateStatus(crd: CustomResourceDefinition): FieldError[] {
  return validateNames(crd.status?.acceptedNames ?? {}, FieldPath.root('status').child('acceptedNames'));
}

function validateStoredVersions(crd: CustomResourceDefinition): FieldError[] {
  const stored = crd.status?.storedVersions ?? [];
  const p = 'status.storedVersions';
  if (stored.length === 0) return [fieldErrors.invalid(p, stored, 'must have at least one stored version')];
  const errs: FieldError[] = [];
  const remaining = new Map(stored.map((v, i) => [v, i]));
  for (const v of crd.spec.versions ?? []) {
    if (v.storage && !remaining.has(v.name)) errs.push(fieldErrors.invalid(p, stored, `must have the storage version ${v.name}`));
    remaining.delete(v.name);
  }
  for (const [v, i] of remaining) errs.push(fieldErrors.invalid(`${p}[${i}]`, v, 'must appear in spec.versions'));
  return errs;
}

function validateSimpleJsonPath(s: string, p: FieldPath): FieldError[] {
  if (s.length === 0) return [fieldErrors.invalid(p, s, 'must not be empty')];
  if (s[0] !== '.') return [fieldErrors.invalid(p, s, 'must be a simple json path starting with .')];
  return [];
}

function validateSubresources(v: CRDVersion, p: FieldPath): FieldError[] {
  const scale = v.subresources?.scale;
  if (!scale) return [];
  const errs: FieldError[] = [];
  const sp = p.child('scale.specReplicasPath');
  if (!scale.specReplicasPath) errs.push(fieldErrors.required(sp));
  else {
    const e = validateSimpleJsonPath(scale.specReplicasPath, sp);
    errs.push(...e);
    if (!e.length && !scale.specReplicasPath.startsWith('.spec.')) errs.push(fieldErrors.invalid(sp, scale.specReplicasPath, 'should be a json path under .spec'));
  }
  const st = p.child('scale.statusReplicasPath');
  if (!scale.statusReplicasPath) errs.push(fieldErrors.required(st));
  else {
    const e = validateSimpleJsonPath(scale.statusReplicasPath, st);
    errs.push(...e);
    if (!e.length && !scale.statusReplicasPath.startsWith('.status.')) errs.push(fieldErrors.invalid(st, scale.statusReplicasPath, 'should be a json path under .status'));
  }
  const ls = scale.labelSelectorPath;
  if (ls) {
    const lp = p.child('scale.labelSelectorPath');
    const e = validateSimpleJsonPath(ls, lp);
    errs.push(...e);
    if (!e.length && !ls.startsWith('.spec.') && !ls.startsWith('.status.')) errs.push(fieldErrors.invalid(lp, ls, 'should be a json path under either .spec or .status'));
  }
  return errs;
}

function validateColumn(c: CRDVersion['additionalPrinterColumns'] extends (infer C)[] | undefined ? C : never, p: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (!c.name) errs.push(fieldErrors.required(p.child('name')));
  const types = `must be one of ${printerColumnTypes.join(',')}`;
  if (!c.type) errs.push(fieldErrors.required(p.child('type'), types));
  else if (!printerColumnTypes.includes(c.type)) errs.push(fieldErrors.invalid(p.child('type'), c.type, types));
  if (c.format && !printerColumnFormats.includes(c.format)) errs.push(fieldErrors.invalid(p.child('format'), c.format, `must be one of ${printerColumnFormats.join(',')}`));
  if (!c.jsonPath) errs.push(fieldErrors.required(p.child('JSONPath')));
  else {
    errs.push(...validateSimpleJsonPath(c.jsonPath, p.child('JSONPath')));
    if (errs.length === 0) {
      try {
        parseJsonPath(c.jsonPath);
      } catch (e) {
        if (e instanceof JsonPathError) errs.push(fieldErrors.invalid(p.child('JSONPath'), c.jsonPath, e.message));
        else throw e;
      }
    }
  }
  return errs;
}

/** The schema node a selectable field's path names (only `.a.b` steps through properties). */
function schemaAt(schema: OpenApiV3Schema, path: string): { node?: OpenApiV3Schema; error?: string; fields: string[] } {
  if (!path.startsWith('.')) return { error: 'must start with .', fields: [] };
  const parts = path.slice(1).split('.');
  let node: OpenApiV3Schema | undefined = schema;
  for (const part of parts) {
    if (part.includes('[')) return { error: 'array notation is not allowed', fields: parts };
    if (!part) return { error: 'unexpected end of JSON path', fields: parts };
    const next: OpenApiV3Schema | undefined = node?.properties?.[part] ?? (typeof node?.additionalProperties === 'object' ? node.additionalProperties : undefined);
    if (!next) return { error: 'does not refer to a valid field', fields: parts };
    node = next;
  }
  return { node, fields: parts };
}

function validateSelectableFields(v: CRDVersion, p: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const schema = v.schema?.openAPIV3Schema;
  if (!schema) return [fieldErrors.invalid(p, '', 'selectableFields may only be set when version.schema.openAPIV3Schema is not included')];
  const seen = new Set<string>();
  (v.selectableFields ?? []).forEach((f, i) => {
    const jp = p.index(i).child('jsonPath');
    if (!f.jsonPath) return errs.push(fieldErrors.required(jp));
    const at = schemaAt(schema, f.jsonPath);
    if (at.error) return errs.push(fieldErrors.invalid(jp, f.jsonPath, `is an invalid path: ${at.error}`));
    if (at.fields[0] === 'metadata') errs.push(fieldErrors.invalid(jp, f.jsonPath, 'must not point to fields in metadata'));
    if (!['string', 'boolean', 'integer'].includes(at.node?.type ?? '')) {
      errs.push(fieldErrors.invalid(jp, f.jsonPath, 'must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.'));
    }
    const key = at.fields.join('.');
    if (seen.has(key)) errs.push(fieldErrors.duplicate(jp, f.jsonPath));
    seen.add(key);
    return undefined;
  });
  if (seen.size > MAX_SELECTABLE_FIELDS) errs.push(fieldErrors.tooMany(p, seen.size, MAX_SELECTABLE_FIELDS));
  return errs;
}

function validateConversion(crd: CustomResourceDefinition, allowInvalidCABundle: boolean): FieldError[] {
  const c = crd.spec.conversion;
  if (!c) return [];
  const p = FieldPath.root('spec').child('conversion');
  const errs: FieldError[] = [];
  if (!c.strategy) errs.push(fieldErrors.required(p.child('strategy')));
  else if (c.strategy !== 'None' && c.strategy !== 'Webhook') errs.push(fieldErrors.notSupported(p.child('strategy'), c.strategy, ['None', 'Webhook']));
  const cc = c.webhook?.clientConfig;
  const reviewVersions = c.webhook?.conversionReviewVersions;
  if (c.strategy === 'Webhook') {
    if (!cc) errs.push(fieldErrors.required(p.child('webhookClientConfig'), 'required when strategy is set to Webhook'));
    else {
      if ((cc.url === undefined) === (cc.service === undefined)) errs.push(fieldErrors.required(p.child('webhookClientConfig'), 'exactly one of url or service is required'));
      else if (cc.url !== undefined) errs.push(...validateWebhookURL(cc.url, p.child('webhookClientConfig').child('url')));
      else if (cc.service) errs.push(...validateWebhookService(cc.service, p.child('webhookClientConfig').child('service')));
      if (cc.caBundle && !allowInvalidCABundle && !looksLikePem(cc.caBundle)) errs.push(fieldErrors.invalid(p.child('webhookClientConfig').child('caBundle'), '', 'unable to load root certificates: unable to parse bytes as PEM block'));
    }
    const rp = p.child('conversionReviewVersions');
    if (!reviewVersions?.length) errs.push(fieldErrors.required(rp));
    else {
      const seen = new Set<string>();
      let accepted = false;
      reviewVersions.forEach((v, i) => {
        if (seen.has(v)) return errs.push(fieldErrors.invalid(rp.index(i), v, 'duplicate version'));
        seen.add(v);
        for (const m of isDNS1035Label(v)) errs.push(fieldErrors.invalid(rp.index(i), v, m));
        if (v === 'v1' || v === 'v1beta1') accepted = true;
        return undefined;
      });
      if (!accepted) errs.push(fieldErrors.invalid(rp, reviewVersions, 'must include at least one of v1, v1beta1'));
    }
  } else {
    if (cc) errs.push(fieldErrors.forbidden(p.child('webhookClientConfig'), 'should not be set when strategy is not set to Webhook'));
    if (reviewVersions?.length) errs.push(fieldErrors.forbidden(p.child('conversionReviewVersions'), 'should not be set when strategy is not set to Webhook'));
  }
  return errs;
}

function looksLikePem(b64: string): boolean {
  const text = Buffer.from(b64, 'base64').toString('utf8');
  return /-----BEGIN CERTIFICATE-----/.test(text);
}

function validateWebhookURL(url: string, p: FieldPath): FieldError[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch (e) {
    return [fieldErrors.invalid(p, url, `host must be specified`)];
  }
  const errs: FieldError[] = [];
  if (u.protocol !== 'https:') errs.push(fieldErrors.invalid(p, url, `'https' is the only allowed URL scheme; ${u.protocol.replace(':', '')} found`));
  if (!u.hostname) errs.push(fieldErrors.invalid(p, url, 'host must be specified'));
  if (u.username || u.password) errs.push(fieldErrors.invalid(p, url, 'user information is not permitted in the URL'));
  if (u.hash) errs.push(fieldErrors.invalid(p, url, 'fragments are not permitted in the URL'));
  if (u.search) errs.push(fieldErrors.invalid(p, url, 'query parameters are not permitted in the URL'));
  return errs;
}

function validateWebhookService(svc: { namespace: string; name: string; path?: string; port?: number }, p: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (!svc.name) errs.push(fieldErrors.required(p.child('name'), 'service name is required'));
  if (!svc.namespace) errs.push(fieldErrors.required(p.child('namespace'), 'service namespace is required'));
  if (svc.port !== undefined && (svc.port < 1 || svc.port > 65535)) errs.push(fieldErrors.invalid(p.child('port'), svc.port, 'port is not valid: must be between 1 and 65535, inclusive'));
  if (svc.path !== undefined && !svc.path.startsWith('/')) errs.push(fieldErrors.invalid(p.child('path'), svc.path, "must start with a '/'"));
  return errs;
}

// ---------------------------------------------------------------------------------------------------
// Schemas.

interface SchemaResult {
  errors: FieldError[];
  cost: number;
  costs: { path: string; cost: number }[];
}

/** One version's openAPIV3Schema: restrictions, structural invariants, completeness, defaults, CEL rules. */
function validateSchema(root: OpenApiV3Schema, p: FieldPath, statusEnabled: boolean, unchanged: boolean): SchemaResult {
  const sp = p.child('openAPIV3Schema');
  const errs: FieldError[] = [];
  if (statusEnabled) {
    for (const [k, v] of Object.entries(root)) {
      if (v === undefined || v === null || v === false || (Array.isArray(v) && v.length === 0) || v === '') continue;
      if (k === 'type') {
        if (v !== 'object') {
          errs.push(fieldErrors.invalid(p.child('openAPIV3Schema.type'), v, 'only "object" is allowed as the type at the root of the schema if the status subresource is enabled'));
          break;
        }
        continue;
      }
      if (!allowedAtRootWithStatus.has(k)) {
        errs.push(fieldErrors.invalid(sp, '', `only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled`));
        break;
      }
    }
  }
  if (root.nullable) errs.push(fieldErrors.forbidden(p.child('openAPIV3Schema.nullable'), 'nullable cannot be true at the root'));
  const w = new SchemaWalker(unchanged);
  w.node(root, sp, { level: 'root', isRoot: true, insideMeta: false, allowDefaults: true, ancestors: [] });
  errs.push(...w.errors);
  if (w.errors.length === 0) errs.push(...w.celErrors);
  return { errors: errs, cost: w.totalCost, costs: w.costs };
}

interface NodeContext {
  level: 'root' | 'field' | 'item';
  isRoot: boolean;
  insideMeta: boolean;
  allowDefaults: boolean;
  defaultsReason?: string;
  /** Where correlation with the old object is lost (oldSelf cannot be used below it). */
  uncorrelatable?: string;
  /** Schemas of the lists and maps above (how often the node can occur). */
  ancestors: Schema[];
  embedded?: boolean;
}

const INT_OR_STRING_ANYOF = [{ type: 'integer' }, { type: 'string' }];

class SchemaWalker {
  errors: FieldError[] = [];
  celErrors: FieldError[] = [];
  totalCost = 0;
  costs: { path: string; cost: number }[] = [];

  constructor(private readonly unchanged: boolean) {}

  node(s: OpenApiV3Schema, p: FieldPath, c: NodeContext): void {
    const errs = this.errors;
    const before = errs.length;
    this.standard(s, p, c);
    if (s.uniqueItems) errs.push(fieldErrors.forbidden(p.child('uniqueItems'), 'uniqueItems cannot be set to true since the runtime complexity becomes quadratic'));
    const ap = s.additionalProperties;
    if (ap !== undefined && s.properties && Object.keys(s.properties).length && (ap !== true)) {
      errs.push(fieldErrors.forbidden(p.child('additionalProperties'), 'additionalProperties and properties are mutual exclusive'));
    }
    // structural invariants
    if (s.type === 'array' && !s.items) errs.push(fieldErrors.required(p.child('items'), 'must be specified'));
    if (ap !== undefined && c.level === 'root') errs.push(fieldErrors.forbidden(p.child('additionalProperties'), 'must not be used at the root'));
    if (s['x-kubernetes-int-or-string'] && s['x-kubernetes-preserve-unknown-fields']) {
      errs.push(fieldErrors.invalid(p.child('x-kubernetes-preserve-unknown-fields'), true, 'must be false if x-kubernetes-int-or-string is true'));
    }
    if (s['x-kubernetes-int-or-string'] && s['x-kubernetes-embedded-resource']) {
      errs.push(fieldErrors.invalid(p.child('x-kubernetes-embedded-resource'), true, 'must be false if x-kubernetes-int-or-string is true'));
    }
    const embedded = !!s['x-kubernetes-embedded-resource'];
    if (embedded && s.type !== 'object') {
      if (!s.type) errs.push(fieldErrors.required(p.child('type'), 'must be object if x-kubernetes-embedded-resource is true'));
      else errs.push(fieldErrors.invalid(p.child('type'), s.type, 'must be object if x-kubernetes-embedded-resource is true'));
    } else if (!s.type && !s['x-kubernetes-int-or-string'] && !s['x-kubernetes-preserve-unknown-fields']) {
      const where = c.level === 'root' ? 'must not be empty at the root' : c.level === 'item' ? 'must not be empty for specified array items' : 'must not be empty for specified object fields';
      errs.push(fieldErrors.required(p.child('type'), where));
    }
    if (embedded && ap !== undefined) errs.push(fieldErrors.forbidden(p.child('additionalProperties'), 'must not be used if x-kubernetes-embedded-resource is set'));
    if (c.level === 'root' && s.type && s.type !== 'object') errs.push(fieldErrors.invalid(p.child('type'), s.type, 'must be object at the root'));
    const checkMeta = c.isRoot || embedded;
    if (checkMeta) {
      for (const f of ['kind', 'apiVersion'] as const) {
        const fs = s.properties?.[f];
        if (fs && fs.type !== 'string') errs.push(fieldErrors.invalid(p.child('properties').key(f).child('type'), fs.type ?? '', 'must be string'));
      }
    }
    const meta = s.properties?.metadata;
    if (meta) {
      const mp = p.child('properties').key('metadata');
      if (checkMeta && meta.type !== 'object') errs.push(fieldErrors.invalid(mp.child('type'), meta.type ?? '', 'must be object'));
      if (c.isRoot) {
        const { type: _t, properties, ...rest } = meta;
        const propKeys = Object.keys(properties ?? {});
        const onlyNames = propKeys.every((k) => k === 'name' || k === 'generateName');
        const restKeys = Object.keys(rest).filter((k) => rest[k] !== undefined && k !== 'description');
        if (!onlyNames || restKeys.length) errs.push(fieldErrors.forbidden(mp, 'must not specify anything other than name and generateName, but metadata is implicitly specified'));
      }
    }
    if (embedded && !s['x-kubernetes-preserve-unknown-fields'] && !Object.keys(s.properties ?? {}).length) {
      errs.push(fieldErrors.required(p.child('properties'), 'must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields'));
    }
    this.valueValidation(s, p, c.level);
    this.completeness(s, p);
    this.extensions(s, p);
    const structuralOk = errs.length === before;

    // children
    const childCtx = (extra: Partial<NodeContext>): NodeContext => ({ ...c, isRoot: false, embedded: false, ...extra });
    if (typeof ap === 'object') {
      let sub = childCtx({ level: 'field', ancestors: [...c.ancestors, convertSafe(s, p.toString())] });
      if (c.insideMeta) sub = { ...sub, allowDefaults: false, defaultsReason: 'inside additionalProperties applying to object metadata' };
      if (s['x-kubernetes-map-type'] === 'atomic') sub.uncorrelatable ??= p.toString();
      this.node(ap, p.child('additionalProperties'), sub);
    }
    for (const [k, v] of Object.entries(s.properties ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))) {
      let sub = childCtx({ level: 'field' });
      if (s['x-kubernetes-map-type'] === 'atomic') sub.uncorrelatable ??= p.toString();
      if ((c.isRoot || embedded) && metaFields.has(k)) {
        sub = { ...sub, insideMeta: true };
        if (c.isRoot) sub = { ...sub, allowDefaults: false, defaultsReason: `in top-level ${k}` };
      }
      this.node(v, p.child('properties').key(k), sub);
    }
    if (s.items && !Array.isArray(s.items)) {
      const sub = childCtx({ level: 'item', ancestors: [...c.ancestors, convertSafe(s, p.toString())] });
      if (s['x-kubernetes-list-type'] !== 'map') sub.uncorrelatable ??= p.toString();
      this.node(s.items, p.child('items'), sub);
    }
    if (structuralOk && s.default !== undefined) this.defaults(s, p, c);
    if (s['x-kubernetes-validations']?.length) this.rules(s, p, c);
  }

  /** What upstream's OpenAPI v3 validator forbids outright. */
  private standard(s: OpenApiV3Schema, p: FieldPath, c: NodeContext): void {
    const errs = this.errors;
    if (s.type && !openApiTypes.includes(s.type)) {
      if (s.type === 'null') errs.push(fieldErrors.forbidden(p.child('type'), 'type cannot be set to null, use nullable as an alternative'));
      else errs.push(fieldErrors.notSupported(p.child('type'), s.type, openApiTypes));
    }
    if (s.default !== undefined && !c.allowDefaults) errs.push(fieldErrors.forbidden(p.child('default'), `must not be set${c.defaultsReason ? ` ${c.defaultsReason}` : ''}`));
    if (s.id) errs.push(fieldErrors.forbidden(p.child('id'), 'id is not supported'));
    if (s.additionalItems !== undefined) errs.push(fieldErrors.forbidden(p.child('additionalItems'), 'additionalItems is not supported'));
    if (s.patternProperties && Object.keys(s.patternProperties as object).length) errs.push(fieldErrors.forbidden(p.child('patternProperties'), 'patternProperties is not supported'));
    if (s.definitions && Object.keys(s.definitions as object).length) errs.push(fieldErrors.forbidden(p.child('definitions'), 'definitions is not supported'));
    if (s.dependencies !== undefined) errs.push(fieldErrors.forbidden(p.child('dependencies'), 'dependencies is not supported'));
    if (s.$ref !== undefined) errs.push(fieldErrors.forbidden(p.child('$ref'), '$ref is not supported'));
    if (Array.isArray(s.items)) errs.push(fieldErrors.forbidden(p.child('items'), 'items must be a schema object and not an array'));
    if (c.insideMeta && s['x-kubernetes-embedded-resource']) errs.push(fieldErrors.forbidden(p.child('x-kubernetes-embedded-resource'), 'must not be used inside of resource meta'));
  }

  /** allOf / anyOf / oneOf / not: value validations only; patterns that compile. */
  private valueValidation(s: OpenApiV3Schema, p: FieldPath, level: NodeContext['level']): void {
    const skipAnyOf = !!s.anyOf && jsonEqual(s.anyOf, INT_OR_STRING_ANYOF);
    const skipFirstAllOfAnyOf = !!s.allOf?.[0]?.anyOf && jsonEqual(s.allOf[0].anyOf, INT_OR_STRING_ANYOF);
    if (!skipAnyOf) s.anyOf?.forEach((x, i) => this.nested(x, p.child('anyOf').index(i), level, false));
    s.allOf?.forEach((x, i) => this.nested(x, p.child('allOf').index(i), level, i === 0 && skipFirstAllOfAnyOf));
    s.oneOf?.forEach((x, i) => this.nested(x, p.child('oneOf').index(i), level, false));
    if (s.not) this.nested(s.not, p.child('not'), level, false);
    if (s.pattern) {
      try {
        new RegExp(s.pattern, 'u');
      } catch (e) {
        this.errors.push(fieldErrors.invalid(p.child('pattern'), s.pattern, `must be a valid regular expression, but isn't: ${(e as Error).message}`));
      }
    }
  }

  private nested(s: OpenApiV3Schema, p: FieldPath, level: NodeContext['level'], skipAnyOf: boolean): void {
    const errs = this.errors;
    const anyOf = s.anyOf;
    const probe: OpenApiV3Schema = skipAnyOf ? { ...s, anyOf: undefined } : s;
    this.valueValidation(probe, p, level);
    if (s.items && !Array.isArray(s.items)) this.nested(s.items, p.child('items'), level, false);
    for (const [k, v] of Object.entries(s.properties ?? {})) {
      if (k === 'metadata' && level !== 'root') errs.push(fieldErrors.forbidden(p.child('properties').key('metadata'), 'must not be specified in a nested context'));
      this.nested(v, p.child('properties').key(k), 'field', false);
    }
    void anyOf;
    if (s.type) errs.push(fieldErrors.forbidden(p.child('type'), 'must be empty to be structural'));
    if (s.additionalProperties !== undefined) errs.push(fieldErrors.forbidden(p.child('additionalProperties'), 'must be undefined to be structural'));
    if (s.default !== undefined) errs.push(fieldErrors.forbidden(p.child('default'), 'must be undefined to be structural'));
    if (s.title) errs.push(fieldErrors.forbidden(p.child('title'), 'must be empty to be structural'));
    if (s.description) errs.push(fieldErrors.forbidden(p.child('description'), 'must be empty to be structural'));
    if (s.nullable) errs.push(fieldErrors.forbidden(p.child('nullable'), 'must be false to be structural'));
    const forbidden: [keyof OpenApiV3Schema, string][] = [
      ['x-kubernetes-preserve-unknown-fields', 'must be false to be structural'],
      ['x-kubernetes-embedded-resource', 'must be false to be structural'],
      ['x-kubernetes-int-or-string', 'must be false to be structural'],
      ['x-kubernetes-list-map-keys', 'must be empty to be structural'],
      ['x-kubernetes-list-type', 'must be undefined to be structural'],
      ['x-kubernetes-map-type', 'must be undefined to be structural'],
      ['x-kubernetes-validations', 'must be empty to be structural'],
    ];
    for (const [k, msg] of forbidden) {
      const v = s[k];
      if (v !== undefined && v !== false && !(Array.isArray(v) && v.length === 0)) errs.push(fieldErrors.forbidden(p.child(k as string), msg));
    }
  }

  /** Everything a value validation names must be specified in the structural part too. */
  private completeness(s: OpenApiV3Schema, p: FieldPath): void {
    const check = (v: OpenApiV3Schema, st: OpenApiV3Schema | undefined, sPath: FieldPath, vPath: FieldPath): void => {
      if (!st) {
        this.errors.push(fieldErrors.required(sPath, `because it is defined in ${vPath.toString()}`));
        return;
      }
      for (const x of [...(v.allOf ?? []), ...(v.anyOf ?? []), ...(v.oneOf ?? []), ...(v.not ? [v.not] : [])]) check(x, st, sPath, vPath);
      for (const [k, pv] of Object.entries(v.properties ?? {})) {
        const child = st.properties?.[k] ?? (typeof st.additionalProperties === 'object' ? st.additionalProperties : undefined) ?? (st['x-kubernetes-preserve-unknown-fields'] ? {} : undefined);
        check(pv, child, sPath.child('properties').key(k), vPath.child('properties').key(k));
      }
      if (v.items && !Array.isArray(v.items)) {
        const it = Array.isArray(st.items) ? undefined : st.items;
        check(v.items, it, sPath.child('items'), vPath.child('items'));
      }
    };
    const groups: [string, OpenApiV3Schema[]][] = [['allOf', s.allOf ?? []], ['anyOf', s.anyOf ?? []], ['oneOf', s.oneOf ?? []], ['not', s.not ? [s.not] : []]];
    for (const [name, list] of groups) {
      list.forEach((x, i) => {
        const vp = name === 'not' ? p.child('not') : p.child(name).index(i);
        for (const [k, pv] of Object.entries(x.properties ?? {})) {
          const child = s.properties?.[k] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined) ?? (s['x-kubernetes-preserve-unknown-fields'] ? {} : undefined);
          check(pv, child, p.child('properties').key(k), vp.child('properties').key(k));
        }
        if (x.items && !Array.isArray(x.items)) check(x.items, Array.isArray(s.items) ? undefined : s.items, p.child('items'), vp.child('items'));
      });
    }
  }

  /** x-kubernetes-preserve-unknown-fields, -map-type, -list-type, -list-map-keys used as upstream allows. */
  private extensions(s: OpenApiV3Schema, p: FieldPath): void {
    const errs = this.errors;
    if (s['x-kubernetes-preserve-unknown-fields'] === false) errs.push(fieldErrors.invalid(p.child('x-kubernetes-preserve-unknown-fields'), false, 'must be true or undefined'));
    const mapType = s['x-kubernetes-map-type'];
    if (mapType !== undefined && s.type !== 'object') {
      if (!s.type) errs.push(fieldErrors.required(p.child('type'), 'must be object if x-kubernetes-map-type is specified'));
      else errs.push(fieldErrors.invalid(p.child('type'), s.type, 'must be object if x-kubernetes-map-type is specified'));
    }
    if (mapType !== undefined && mapType !== 'atomic' && mapType !== 'granular') errs.push(fieldErrors.notSupported(p.child('x-kubernetes-map-type'), mapType, ['atomic', 'granular']));
    const listType = s['x-kubernetes-list-type'];
    const items = Array.isArray(s.items) ? undefined : s.items;
    if (listType !== undefined && s.type !== 'array') {
      if (!s.type) errs.push(fieldErrors.required(p.child('type'), 'must be array if x-kubernetes-list-type is specified'));
      else errs.push(fieldErrors.invalid(p.child('type'), s.type, 'must be array if x-kubernetes-list-type is specified'));
    } else if (listType === 'set' && items) {
      if (items.type === 'array' && items['x-kubernetes-list-type'] !== undefined && items['x-kubernetes-list-type'] !== 'atomic') {
        errs.push(fieldErrors.invalid(p.child('items').child('x-kubernetes-list-type'), items['x-kubernetes-list-type'], 'must be atomic as item of a list with x-kubernetes-list-type=set'));
      }
      if (items.type === 'object' && items['x-kubernetes-map-type'] !== 'atomic') {
        errs.push(fieldErrors.invalid(p.child('items').child('x-kubernetes-map-type'), items['x-kubernetes-map-type'] ?? null, 'must be atomic as item of a list with x-kubernetes-list-type=set'));
      }
    }
    if (listType !== undefined && !['atomic', 'set', 'map'].includes(listType)) errs.push(fieldErrors.notSupported(p.child('x-kubernetes-list-type'), listType, ['atomic', 'set', 'map']));
    const keys = s['x-kubernetes-list-map-keys'] ?? [];
    if (keys.length) {
      if (listType === undefined) errs.push(fieldErrors.required(p.child('x-kubernetes-list-type'), 'must be map if x-kubernetes-list-map-keys is non-empty'));
      else if (listType !== 'map') errs.push(fieldErrors.invalid(p.child('x-kubernetes-list-type'), listType, 'must be map if x-kubernetes-list-map-keys is non-empty'));
    }
    if (listType === 'map') {
      if (!keys.length) errs.push(fieldErrors.required(p.child('x-kubernetes-list-map-keys'), 'must not be empty if x-kubernetes-list-type is map'));
      if (!s.items) errs.push(fieldErrors.required(p.child('items'), 'must have a schema if x-kubernetes-list-type is map'));
      if (items && items.type !== 'object') errs.push(fieldErrors.invalid(p.child('items').child('type'), items.type ?? '', "must be object if parent array's x-kubernetes-list-type is map"));
      if (items?.type === 'object') {
        const seen = new Set<string>();
        for (const k of keys) {
          const ks = items.properties?.[k];
          if (!ks) errs.push(fieldErrors.invalid(p.child('x-kubernetes-list-map-keys'), keys, 'entries must all be names of item properties'));
          else if (ks.type === 'array' || ks.type === 'object') errs.push(fieldErrors.invalid(p.child('items').child('properties').key(k).child('type'), items.type, "must be a scalar type if parent array's x-kubernetes-list-type is map"));
          if (seen.has(k)) errs.push(fieldErrors.invalid(p.child('x-kubernetes-list-map-keys'), keys, 'must not contain duplicate entries'));
          seen.add(k);
        }
      }
    }
    if (items && (listType === 'set' || listType === 'map')) {
      if (items.nullable) errs.push(fieldErrors.forbidden(p.child('items').child('nullable'), `cannot be nullable when x-kubernetes-list-type is ${listType}`));
      if (listType === 'map') {
        for (const k of keys) {
          const ks = items.properties?.[k];
          if (!ks) continue;
          if (!items.required?.includes(k) && ks.default === undefined) {
            errs.push(fieldErrors.required(p.child('items').child('properties').key(k).child('default'), 'this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property'));
          }
          if (ks.nullable) errs.push(fieldErrors.forbidden(p.child('items').child('properties').key(k).child('nullable'), 'this property is in x-kubernetes-list-map-keys, so it cannot be nullable'));
        }
      }
    }
  }

  /** A default must be pruned already and valid against its own node (types, value checks, rules). */
  private defaults(s: OpenApiV3Schema, p: FieldPath, c: NodeContext): void {
    const node = convertSafe(s, p.toString());
    const dp = p.child('default');
    const decoded = decodeStructural(structuredClone(s.default), node, dp.toString());
    if (decoded.unknownFields.length) {
      this.errors.push(fieldErrors.invalid(dp, s.default, 'must not have unknown fields'));
      return;
    }
    if (decoded.errors.length) {
      this.errors.push(...decoded.errors);
      return;
    }
    const v = applyDefaults(decoded.value, node);
    const value = validateValues(v, node, dp.toString());
    if (value.length) {
      this.errors.push(...value);
      return;
    }
    if (c.embedded) return;
    this.celErrors.push(...evaluateRules(v, v, node, dp.toString()));
  }

  /** Each rule: what it says must be well formed; the program must compile and stay within its cost. */
  private rules(s: OpenApiV3Schema, p: FieldPath, c: NodeContext): void {
    const node = convertSafe(s, p.toString());
    const rp = p.child('x-kubernetes-validations');
    const before = this.errors.length;
    (s['x-kubernetes-validations'] ?? []).forEach((r, i) => {
      const ip = rp.index(i);
      const rule = (r.rule ?? '').trim();
      const msg = (r.message ?? '').trim();
      if (!rule) this.errors.push(fieldErrors.required(ip.child('rule'), 'rule is not specified'));
      else if (r.message !== undefined && r.message.length > 0 && !msg) this.errors.push(fieldErrors.invalid(ip.child('message'), r.message, 'message must be non-empty if specified'));
      else if (/[\n\r]/.test(msg)) this.errors.push(fieldErrors.invalid(ip.child('message'), r.message, 'message must not contain line breaks'));
      else if (/[\n\r]/.test(rule) && !msg) this.errors.push(fieldErrors.required(ip.child('message'), 'message must be specified if rule contains line breaks'));
      if (r.messageExpression !== undefined && r.messageExpression.length > 0 && !r.messageExpression.trim()) {
        this.errors.push(fieldErrors.required(ip.child('messageExpression'), 'messageExpression must be non-empty if specified'));
      }
      if (r.reason !== undefined && !reasons.includes(r.reason)) this.errors.push(fieldErrors.notSupported(ip.child('reason'), r.reason, reasons));
      if (r.fieldPath !== undefined) {
        const fp = r.fieldPath;
        if (fp.length > 0 && !fp.trim()) this.errors.push(fieldErrors.invalid(ip.child('fieldPath'), fp, 'fieldPath must be non-empty if specified'));
        if (/[\n\r]/.test(fp)) this.errors.push(fieldErrors.invalid(ip.child('fieldPath'), fp, 'fieldPath must not contain line breaks'));
        if (fp.trim() && !fieldPathValid(s, fp)) this.errors.push(fieldErrors.invalid(ip.child('fieldPath'), fp, 'fieldPath must be a valid path'));
      }
    });
    if (this.errors.length !== before) return;
    const cardinality = cardinalityOf(c.ancestors);
    (s['x-kubernetes-validations'] ?? []).forEach((r, i) => {
      const ip = rp.index(i);
      let compiled;
      try {
        compiled = compileRule(r);
      } catch (e) {
        if (!(e instanceof CelCompileError)) throw e;
        if (e.message.startsWith('messageExpression')) this.celErrors.push(fieldErrors.invalid(ip.child('messageExpression'), new GoLiteral(ruleLiteral(r)), e.message));
        else this.celErrors.push(fieldErrors.invalid(ip.child('rule'), new GoLiteral(ruleLiteral(r)), e.message));
        return;
      }
      const cost = Math.min(staticCost(compiled, node) * cardinality, Number.MAX_SAFE_INTEGER);
      if (!this.unchanged && cost > STATIC_ESTIMATED_COST_LIMIT) {
        this.celErrors.push(fieldErrors.forbidden(ip.child('rule'), costErrorMessage('estimated rule cost', cost, STATIC_ESTIMATED_COST_LIMIT)));
      }
      this.totalCost = Math.min(this.totalCost + cost, Number.MAX_SAFE_INTEGER);
      this.costs.push({ path: ip.child('rule').toString(), cost });
      if (compiled.usesOldSelf) {
        if (c.uncorrelatable !== undefined) {
          this.celErrors.push(fieldErrors.invalid(ip.child('rule'), r.rule, `oldSelf cannot be used on the uncorrelatable portion of the schema within ${c.uncorrelatable}`));
        }
      } else if (r.optionalOldSelf !== undefined) {
        this.celErrors.push(fieldErrors.invalid(ip.child('optionalOldSelf'), r.optionalOldSelf, 'may not be set if oldSelf is not used in rule'));
      }
    });
  }
}

/** A rule as Go's %v prints the struct in upstream's messages. */
const ruleLiteral = (r: { rule: string; message?: string; messageExpression?: string; reason?: string; fieldPath?: string }): string =>
  `apiextensions.ValidationRule{Rule:${JSON.stringify(r.rule)}, Message:${JSON.stringify(r.message ?? '')}, MessageExpression:${JSON.stringify(r.messageExpression ?? '')}, Reason:${r.reason ? `"${r.reason}"` : 'nil'}, FieldPath:${JSON.stringify(r.fieldPath ?? '')}}`;

/** A rule's fieldPath must name a field below the node: `.a`, `['b']`, `.c[0]` is not allowed for lists... */
function fieldPathValid(s: OpenApiV3Schema, fp: string): boolean {
  let node: OpenApiV3Schema | undefined = s;
  const re = /\.([A-Za-z_][A-Za-z0-9_-]*)|\['((?:[^'\\]|\\.)*)'\]/y;
  let m: RegExpExecArray | null;
  let consumed = 0;
  while ((m = re.exec(fp)) !== null) {
    const name = m[1] ?? m[2]!;
    consumed = re.lastIndex;
    const next: OpenApiV3Schema | undefined = node?.properties?.[name] ?? (typeof node?.additionalProperties === 'object' ? node.additionalProperties : undefined);
    if (!next) return false;
    node = next;
  }
  return consumed === fp.length && consumed > 0;
}

/** The converted node of a schema being validated (conversion never fails on the shapes checked so far). */
function convertSafe(s: OpenApiV3Schema, name: string): Schema {
  return convert(s, name);
}
