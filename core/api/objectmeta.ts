/**
 * ObjectMeta rules shared by every kind: what a create may carry (name or generateName, namespace,
 * labels, annotations, owner references, finalizers, managed fields) and what an update may change.
 * Messages and field paths are upstream's (apimachinery's ValidateObjectMetaAccessor and its Update
 * variant); the generic registry runs these before a kind's own validators. Also: name generation,
 * the extra finalizer-name rule of the built-in kinds, and the Age cell every table prints.
 */
import { type FieldError, fieldErrors } from './field-errors.js';
import type { ManagedFieldsEntry, ObjectMeta, OwnerReference } from './types.js';
import {
  type NameRuleName,
  type NameValidator,
  byteLength,
  goQuote,
  goStringSlice,
  invalidEach,
  isPrintRune,
  isQualifiedName,
  nameIsDNSLabel,
  nameValidatorFor,
  validateAnnotations,
  validateImmutableField,
  validateLabels,
  validateNonnegativeField,
  FIELD_IMMUTABLE,
} from './validation.js';

export const FINALIZER_ORPHAN_DEPENDENTS = 'orphan';
export const FINALIZER_DELETE_DEPENDENTS = 'foregroundDeletion';
/** The namespace finalizer (upstream's `kubernetes`). */
export const FINALIZER_SVC = 'svc';
/** Finalizer names the built-in kinds accept without a domain prefix. */
export const STANDARD_FINALIZERS: ReadonlySet<string> = new Set([FINALIZER_SVC, FINALIZER_ORPHAN_DEPENDENTS, FINALIZER_DELETE_DEPENDENTS]);

export const FIELD_MANAGER_MAX_LENGTH = 128;
export const MAX_SUBRESOURCE_NAME_LENGTH = 256;

export interface ObjectMetaRules {
  namespaced: boolean;
  /** Rule for metadata.name (and generateName as a prefix); default dns1123-subdomain. */
  nameRule?: NameRuleName | NameValidator;
}

const child = (path: string, name: string): string => (path ? `${path}.${name}` : name);

/**
 * Create-time rules. The name must already be generated from generateName (as upstream does before
 * validating); a still-empty name with a generateName is let through for a registry that generates later.
 */
export function validateObjectMeta(meta: ObjectMeta | undefined, rules: ObjectMetaRules, path = 'metadata'): FieldError[] {
  const m = meta ?? {};
  const errs: FieldError[] = [];
  const nameFn = nameValidatorFor(rules.nameRule);
  if (m.generateName) {
    errs.push(...invalidEach(child(path, 'generateName'), m.generateName, nameFn(m.generateName, true)));
  }
  if (!m.name) {
    if (!m.generateName) errs.push(fieldErrors.required(child(path, 'name'), 'name or generateName is required'));
  } else {
    errs.push(...invalidEach(child(path, 'name'), m.name, nameFn(m.name, false)));
  }
  if (rules.namespaced) {
    if (!m.namespace) errs.push(fieldErrors.required(child(path, 'namespace'), ''));
    else errs.push(...invalidEach(child(path, 'namespace'), m.namespace, nameIsDNSLabel(m.namespace, false)));
  } else if (m.namespace) {
    errs.push(fieldErrors.forbidden(child(path, 'namespace'), 'not allowed on this type'));
  }
  errs.push(...validateMetaFields(m, path));
  return errs;
}

/** The field rules create and update share. */
function validateMetaFields(m: ObjectMeta, path: string): FieldError[] {
  return [
    ...validateNonnegativeField(m.generation, child(path, 'generation')),
    ...validateLabels(m.labels, child(path, 'labels')),
    ...validateAnnotations(m.annotations, child(path, 'annotations')),
    ...validateOwnerReferences(m.ownerReferences, child(path, 'ownerReferences')),
    ...validateFinalizers(m.finalizers, child(path, 'finalizers')),
    ...validateManagedFields(m.managedFields, child(path, 'managedFields')),
  ];
}

/**
 * Update-time rules: the shared field rules on the new meta, then no new finalizers while deleting,
 * generation not decremented, immutable identity and deletion fields. upstream's "resourceVersion must
 * be specified for an update" is the registry's (it strips resourceVersion before hooks run).
 * As upstream, the registry first carries uid, creationTimestamp, deletionTimestamp and
 * deletionGracePeriodSeconds over from the stored object (see inheritSystemMetadata).
 */
export function validateObjectMetaUpdate(next: ObjectMeta | undefined, old: ObjectMeta | undefined, path = 'metadata'): FieldError[] {
  const n = next ?? {};
  const o = old ?? {};
  // upstream checks the new meta with the create-time field rules first, then the update rules.
  const errs: FieldError[] = validateMetaFields(n, path);
  if (o.deletionTimestamp) {
    const added = addedFinalizers(n, o);
    if (added.length) {
      errs.push(
        fieldErrors.forbidden(
          child(path, 'finalizers'),
          `no new finalizers can be added if the object is being deleted, found new finalizers ${goStringSlice(added)}`,
        ),
      );
    }
  }
  if ((n.generation ?? 0) < (o.generation ?? 0)) errs.push(fieldErrors.invalid(child(path, 'generation'), n.generation ?? 0, 'must not be decremented'));
  errs.push(...validateImmutableField(n.name ?? '', o.name ?? '', child(path, 'name')));
  errs.push(...validateImmutableField(n.namespace ?? '', o.namespace ?? '', child(path, 'namespace')));
  errs.push(...validateImmutableField(n.uid ?? '', o.uid ?? '', child(path, 'uid')));
  if (!timeEqual(n.creationTimestamp, o.creationTimestamp)) {
    errs.push(fieldErrors.invalid(child(path, 'creationTimestamp'), n.creationTimestamp ?? null, FIELD_IMMUTABLE));
  }
  if (!timeEqual(n.deletionTimestamp, o.deletionTimestamp)) {
    errs.push(fieldErrors.invalid(child(path, 'deletionTimestamp'), n.deletionTimestamp ?? null, FIELD_IMMUTABLE));
  }
  errs.push(...validateImmutableField(n.deletionGracePeriodSeconds, o.deletionGracePeriodSeconds, child(path, 'deletionGracePeriodSeconds')));
  return errs;
}

/** Finalizers `next` has that `old` had not, sorted and without repeats. */
function addedFinalizers(next: ObjectMeta | undefined, old: ObjectMeta | undefined): string[] {
  const had = new Set(old?.finalizers ?? []);
  return [...new Set((next?.finalizers ?? []).filter((f) => !had.has(f)))].sort();
}

/** Timestamps are equal when both are unset or both name the same instant. */
function timeEqual(a: string | null | undefined, b: string | null | undefined): boolean {
  if (!a || !b) return !a && !b;
  if (a === b) return true;
  const ta = Date.parse(a);
  return !Number.isNaN(ta) && ta === Date.parse(b);
}

/**
 * What upstream's BeforeUpdate does before validation: requests cannot change generation, and the
 * system fields a client may omit are taken from the stored object. `prepare` (the kind's
 * PrepareForUpdate) runs between the two, as upstream orders them, so it may bump generation itself.
 */
export function inheritSystemMetadata(next: ObjectMeta, old: ObjectMeta, prepare?: () => void): void {
  if (old.generation !== undefined) next.generation = old.generation;
  else delete next.generation;
  prepare?.();
  if (!next.uid && old.uid) next.uid = old.uid;
  if (old.creationTimestamp) next.creationTimestamp = old.creationTimestamp;
  if (old.deletionTimestamp) next.deletionTimestamp = old.deletionTimestamp;
  if (old.deletionGracePeriodSeconds != null && next.deletionGracePeriodSeconds == null) {
    next.deletionGracePeriodSeconds = old.deletionGracePeriodSeconds;
  }
}

/** `group/version` split as upstream's ParseGroupVersion; null when there is more than one '/'. */
function parseGroupVersion(gv: string): { group: string; version: string } | null {
  if (gv === '' || gv === '/') return { group: '', version: '' };
  const i = gv.indexOf('/');
  if (i < 0) return { group: '', version: gv };
  if (gv.indexOf('/', i + 1) >= 0) return null;
  return { group: gv.slice(0, i), version: gv.slice(i + 1) };
}

function validateOwnerReference(ref: OwnerReference, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const apiVersion = ref.apiVersion ?? '';
  const kind = ref.kind ?? '';
  const gv = parseGroupVersion(apiVersion) ?? { group: '', version: '' };
  if (!gv.version) errs.push(fieldErrors.invalid(child(path, 'apiVersion'), apiVersion, 'version must not be empty'));
  if (!kind) errs.push(fieldErrors.invalid(child(path, 'kind'), kind, 'kind must not be empty'));
  if (!ref.name) errs.push(fieldErrors.invalid(child(path, 'name'), ref.name ?? '', 'name must not be empty'));
  if (!ref.uid) errs.push(fieldErrors.invalid(child(path, 'uid'), ref.uid ?? '', 'uid must not be empty'));
  // core/v1 Events may not own anything.
  if (gv.group === '' && gv.version === 'v1' && kind === 'Event') {
    errs.push(fieldErrors.invalid(path, ref, `${gv.group}/${gv.version}, Kind=${kind} is disallowed from being an owner`));
  }
  return errs;
}

export function validateOwnerReferences(refs: readonly OwnerReference[] | undefined, path: string): FieldError[] {
  const errs: FieldError[] = [];
  let firstController = '';
  for (const ref of refs ?? []) {
    errs.push(...validateOwnerReference(ref, path));
    if (ref.controller === true) {
      const current = `${ref.kind ?? ''}/${ref.name ?? ''}`;
      if (firstController) {
        errs.push(
          fieldErrors.invalid(
            path,
            refs,
            `Only one reference can have Controller set to true. Found "true" in references for ${firstController} and ${current}`,
          ),
        );
      } else {
        firstController = current;
      }
    }
  }
  return errs;
}

/** Finalizer names are qualified names; orphan and foregroundDeletion exclude each other. */
export function validateFinalizers(finalizers: readonly string[] | undefined, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!finalizers) return errs;
  let orphan = false;
  let foreground = false;
  for (const f of finalizers) {
    errs.push(...invalidEach(path, f, isQualifiedName(f)));
    if (f === FINALIZER_ORPHAN_DEPENDENTS) orphan = true;
    if (f === FINALIZER_DELETE_DEPENDENTS) foreground = true;
  }
  if (orphan && foreground) {
    errs.push(fieldErrors.invalid(path, finalizers, `finalizer ${FINALIZER_ORPHAN_DEPENDENTS} and ${FINALIZER_DELETE_DEPENDENTS} cannot be both set`));
  }
  return errs;
}

const NOT_STANDARD_FINALIZER = 'name is neither a standard finalizer name nor is it fully qualified';

/** The built-in kinds' extra rule: a finalizer without a '/' must be one of the standard names. */
export function validateStandardFinalizerName(name: string, path: string): FieldError[] {
  return name.includes('/') || STANDARD_FINALIZERS.has(name) ? [] : [fieldErrors.invalid(path, name, NOT_STANDARD_FINALIZER)];
}

/** Per-index standard-name check of metadata.finalizers, run by the core, storage and RBAC kinds. */
export function validateBuiltinFinalizerNames(meta: ObjectMeta | undefined, path = 'metadata'): FieldError[] {
  const errs: FieldError[] = [];
  const finalizers = meta?.finalizers ?? [];
  for (let i = 0; i < finalizers.length; i++) errs.push(...validateStandardFinalizerName(finalizers[i]!, `${child(path, 'finalizers')}[${i}]`));
  return errs;
}

/** A finalizer name as the namespace spec checks it: qualified name and standard-or-prefixed. */
export function validateFinalizerName(name: string, path: string): FieldError[] {
  const errs: FieldError[] = [];
  errs.push(...invalidEach(path, name, isQualifiedName(name)));
  errs.push(...validateStandardFinalizerName(name, path));
  return errs;
}

/** Warnings custom resources get (instead of errors) for finalizer names added by this write. */
export function finalizerNameWarnings(next: ObjectMeta | undefined, old?: ObjectMeta): string[] {
  const path = 'metadata.finalizers';
  const warnings: string[] = [];
  for (const f of addedFinalizers(next, old)) {
    for (const msg of isQualifiedName(f)) warnings.push(`${path}: ${goQuote(f)}: ${msg}`);
    if (!f.includes('/') && !STANDARD_FINALIZERS.has(f)) {
      const hint = f.includes('.') ? 'prefer a domain-qualified finalizer name including a path (/)' : 'prefer a domain-qualified finalizer name';
      warnings.push(`${path}: ${goQuote(f)}: ${hint} to avoid accidental conflicts with other finalizer writers`);
    }
  }
  return warnings;
}

/** A field manager name: at most 128 bytes of printable characters. */
export function validateFieldManager(manager: string | undefined, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const fm = manager ?? '';
  if (byteLength(fm) > FIELD_MANAGER_MAX_LENGTH) errs.push(fieldErrors.tooLong(path, '', FIELD_MANAGER_MAX_LENGTH));
  let bytePos = 0;
  for (const ch of fm) {
    const cp = ch.codePointAt(0)!;
    // Go reads invalid UTF-8 (our lone surrogates) as U+FFFD, which is printable.
    if (!isPrintRune(cp) && !(cp >= 0xd800 && cp <= 0xdfff)) {
      const hex = cp.toString(16).toUpperCase().padStart(4, '0');
      errs.push(fieldErrors.invalid(path, fm, `invalid character U+${hex} (at position ${bytePos})`));
    }
    bytePos += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  return errs;
}

export function validateManagedFields(entries: readonly ManagedFieldsEntry[] | undefined, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const list = entries ?? [];
  for (let i = 0; i < list.length; i++) {
    const e = list[i]!;
    const p = `${path}[${i}]`;
    if (e.operation !== 'Apply' && e.operation !== 'Update') {
      errs.push(fieldErrors.invalid(`${p}.operation`, e.operation ?? '', 'must be `Apply` or `Update`'));
    }
    if (e.fieldsType && e.fieldsType !== 'FieldsV1') errs.push(fieldErrors.invalid(`${p}.fieldsType`, e.fieldsType, 'must be `FieldsV1`'));
    errs.push(...validateFieldManager(e.manager, `${p}.manager`));
    if (byteLength(e.subresource ?? '') > MAX_SUBRESOURCE_NAME_LENGTH) {
      errs.push(fieldErrors.tooLong(`${p}.subresource`, '', MAX_SUBRESOURCE_NAME_LENGTH));
    }
  }
  return errs;
}

const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const MAX_GENERATED_BASE_LENGTH = 63 - 5;

/** Upstream's 5 random characters from an alphabet without vowels (no accidental words). */
export function generateNameSuffix(): string {
  let s = '';
  for (let i = 0; i < 5; i++) s += NAME_ALPHABET[Math.floor(Math.random() * NAME_ALPHABET.length)];
  return s;
}

/** generateName + suffix, the base cut to 58 bytes so the result fits a 63-character label. */
export function generateName(base: string): string {
  const cut = byteLength(base) > MAX_GENERATED_BASE_LENGTH ? Buffer.from(base).subarray(0, MAX_GENERATED_BASE_LENGTH).toString() : base;
  return cut + generateNameSuffix();
}

/** Upstream's short human duration ("45s", "3m20s", "5h", "2d4h", "3y12d"). */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  const years = Math.trunc(hours / 24 / 365);
  if (hours < 24 * 365 * 8) {
    const days = Math.trunc(hours / 24) % 365;
    return days === 0 ? `${years}y` : `${years}y${days}d`;
  }
  return `${years}y`;
}

const ZERO_TIME = Date.parse('0001-01-01T00:00:00Z');

/** Unset, or Go's zero time (what a non-pointer time field holds when nobody set it). */
export const isZeroTime = (ts: string | null | undefined): boolean => !ts || Date.parse(ts) === ZERO_TIME;

/** The Age / Last Seen cell: time since a timestamp, `<unknown>` when unset (or Go's zero time). */
export function timestampAge(ts: string | null | undefined, now = Date.now()): string {
  if (isZeroTime(ts)) return '<unknown>';
  const t = Date.parse(ts!);
  return Number.isNaN(t) ? '<unknown>' : humanDuration(now - t);
}

/** The Name column every kind's table starts with. */
export const metadataNameColumn = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name of the object, unique within its namespace (or the cluster for cluster-scoped kinds).',
  cell: (obj: { metadata?: ObjectMeta }): string => obj.metadata?.name ?? '',
} as const;

/** The Age column: time since creation. */
export const metadataAgeColumn = {
  name: 'Age',
  type: 'string',
  description: 'Time since the object was created (from metadata.creationTimestamp).',
  cell: (obj: { metadata?: ObjectMeta }): string => timestampAge(obj.metadata?.creationTimestamp),
} as const;
