/**
 * Loads the project's own .proto files (<repo>/proto/) into one protobufjs Root, once, at module load.
 * The directory is found by walking up from this compiled file, so the same code works from dist/,
 * dist-proto/ or any other build directory inside the repository.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/** Our .proto files, dependencies first. */
export const PROTO_FILES = ['runtime.proto', 'meta-v1.proto', 'resource.proto', 'core-v1.proto', 'storage-v1.proto', 'coordination-v1.proto', 'authentication-v1.proto', 'authorization-v1.proto', 'rbac-v1.proto', 'admissionregistration-v1.proto', 'admissionregistration-v1alpha1.proto', 'certificates-v1.proto', 'certificates-v1alpha1.proto', 'apiregistration-v1.proto', 'flowcontrol-v1.proto'] as const;

/** The bytes every enveloped protobuf body starts with ("k8s\0"). */
export const PROTOBUF_MAGIC: Readonly<Uint8Array> = Uint8Array.of(0x6b, 0x38, 0x73, 0x00);

export const hasProtobufMagic = (b: Uint8Array): boolean => b.length >= PROTOBUF_MAGIC.length && PROTOBUF_MAGIC.every((x, i) => b[i] === x);

export const META_V1 = 'svc.io.apimachinery.pkg.apis.meta.v1';
export const RUNTIME = 'svc.io.apimachinery.pkg.runtime';
export const QUANTITY = 'svc.io.apimachinery.pkg.api.resource.Quantity';

/** The nearest ancestor's proto/ directory that holds our files. */
export function findProtoDir(start: string = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = start; ; ) {
    const candidate = join(dir, 'proto');
    if (PROTO_FILES.every((f) => existsSync(join(candidate, f)))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`protobuf codec: no proto/ directory with ${PROTO_FILES.join(', ')} above ${start}`);
    dir = parent;
  }
}

function loadRoot(): protobuf.Root {
  const dir = findProtoDir();
  // Imports inside the files name siblings ("meta-v1.proto"), resolved next to the importing file.
  const root = new protobuf.Root().loadSync(PROTO_FILES.map((f) => join(dir, f)));
  root.resolveAll();
  return root;
}

// Parsed on first use, not at import: about 80 ms of every process's start (each pool thread
// included) that a server whose clients speak JSON never needs.
let root: protobuf.Root | undefined;

/** Every message type of the project's .proto files, resolved. */
export const protoRoot = (): protobuf.Root => (root ??= loadRoot());

const typesByName = new Map<string, protobuf.Type>();

/** The message type with this fully-qualified name (no leading dot); throws if it is not defined. */
export function messageType(fullName: string): protobuf.Type {
  let t = typesByName.get(fullName);
  if (!t) typesByName.set(fullName, (t = protoRoot().lookupType(fullName)));
  return t;
}

/** A type's fully-qualified name without protobufjs's leading dot. */
export const typeName = (t: protobuf.Type): string => t.fullName.replace(/^\./, '');

/** A list-of-strings wrapper (upstream's ExtraValue types and meta/v1 Verbs): its JSON form is the plain array. */
export const isStringListWrapper = (t: protobuf.Type): boolean => t.name === 'ExtraValue' || t.name === 'Verbs';

/** Fields whose JSON key is not their protobuf name (upstream's Go JSON tags). */
const jsonKeyOverrides: Readonly<Record<string, string>> = {
  'svc.io.api.authentication.v1.BoundObjectReference.uID': 'uid',
  'svc.io.api.admissionregistration.v1.ValidatingWebhookConfiguration.Webhooks': 'webhooks',
  'svc.io.api.admissionregistration.v1.MutatingWebhookConfiguration.Webhooks': 'webhooks',
  'svc.io.api.admissionregistration.v1.Validation.Expression': 'expression',
  'svc.io.api.admissionregistration.v1.Variable.Name': 'name',
  'svc.io.api.admissionregistration.v1.Variable.Expression': 'expression',
  'svc.io.api.admissionregistration.v1alpha1.Variable.Name': 'name',
  'svc.io.api.admissionregistration.v1alpha1.Variable.Expression': 'expression',
};

/**
 * Fields that hold an embedded Go struct (`json:",inline"`): on the wire a message of their own, in
 * JSON the message's fields sit in the enclosing object.
 */
const inlineFields: ReadonlySet<string> = new Set([
  'svc.io.api.admissionregistration.v1.RuleWithOperations.rule',
  'svc.io.api.admissionregistration.v1.NamedRuleWithOperations.ruleWithOperations',
  'svc.io.api.admissionregistration.v1alpha1.NamedRuleWithOperations.ruleWithOperations',
]);

/** Whether a message field is an embedded struct whose fields JSON inlines. */
export const isInlineField = (field: protobuf.Field): boolean => !!field.parent && inlineFields.has(`${field.parent.fullName.replace(/^\./, '')}.${field.name}`);

/** The JSON key of a message field. */
export function jsonKey(field: protobuf.Field): string {
  const parent = field.parent;
  if (!parent) return field.name;
  return jsonKeyOverrides[`${parent.fullName.replace(/^\./, '')}.${field.name}`] ?? field.name;
}
