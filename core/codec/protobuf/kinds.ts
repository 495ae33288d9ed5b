/**
 * Which protobuf message each served apiVersion + kind is written as. Resource kinds are registered
 * from their declarations (ResourceType.protobufPackage) when the registry is built, on the main
 * thread and in every worker alike; custom resources have no protobuf form and are never registered.
 * Every registered group version also accepts DeleteOptions (as upstream registers it in each), and
 * Status is known under v1 and meta.svc.io/v1 (for error responses). The discovery documents are
 * upstream's unversioned kinds: written under apiVersion v1, whatever the JSON form says (/api has none).
 */
import type protobuf from 'protobufjs';
import { canonicalSpelling, respellApiVersion } from '../../api/group-aliases.js';
import { META_V1, messageType } from './proto-root.js';

/** apiVersion -> kind -> message name. */
const servedKinds = new Map<string, Map<string, string>>([
  [
    'meta.svc.io/v1',
    new Map([
      ['PartialObjectMetadata', `${META_V1}.PartialObjectMetadata`],
      ['PartialObjectMetadataList', `${META_V1}.PartialObjectMetadataList`],
    ]),
  ],
]);

const kindsInEveryVersion: Readonly<Record<string, string>> = { DeleteOptions: `${META_V1}.DeleteOptions` };
const statusVersions = new Set(['v1', 'meta.svc.io/v1']);

/** Kinds upstream registers unversioned (discovery), with the apiVersion their envelope carries. */
const unversionedKinds: Readonly<Record<string, string>> = {
  APIVersions: `${META_V1}.APIVersions`,
  APIGroupList: `${META_V1}.APIGroupList`,
  APIGroup: `${META_V1}.APIGroup`,
  APIResourceList: `${META_V1}.APIResourceList`,
};
export const UNVERSIONED_API_VERSION = 'v1';

/** The apiVersion an envelope carries for a value of `kind` whose JSON form says `apiVersion` (maybe nothing). */
export const envelopeApiVersion = (apiVersion: string | undefined, kind: string): string =>
  apiVersion || (Object.hasOwn(unversionedKinds, kind) ? UNVERSIONED_API_VERSION : '');

/** Registers `kind` of `apiVersion` as message `<pkg>.<kind>` (and its list as `<pkg>.<kind>List`). */
export function registerProtobufKind(apiVersion: string, kind: string, pkg: string, withList: boolean): void {
  let kinds = servedKinds.get(apiVersion);
  if (!kinds) servedKinds.set(apiVersion, (kinds = new Map()));
  // the messages are looked up on first use (the .proto files are parsed then); that every declared
  // kind has them is checked by test/codec/protobuf.test.ts
  kinds.set(kind, `${pkg}.${kind}`);
  if (withList) kinds.set(`${kind}List`, `${pkg}.${kind}List`);
}

/** The message name for apiVersion + kind, or undefined when the pair is not served. */
export function messageNameForKind(spelledApiVersion: string, kind: string): string | undefined {
  // upstream's group spelling (storage.k8s.io) names the same messages as ours
  const apiVersion = respellApiVersion(spelledApiVersion, canonicalSpelling);
  if (apiVersion === UNVERSIONED_API_VERSION && Object.hasOwn(unversionedKinds, kind)) return unversionedKinds[kind];
  const kinds = servedKinds.get(apiVersion);
  if (!kinds) return undefined;
  const name = kinds.get(kind);
  if (name) return name;
  if (Object.hasOwn(kindsInEveryVersion, kind)) return kindsInEveryVersion[kind];
  if (kind === 'Status' && statusVersions.has(apiVersion)) return `${META_V1}.Status`;
  return undefined;
}

/** The message type for apiVersion + kind, or undefined when the pair is not served. */
export function messageTypeForKind(apiVersion: string, kind: string): protobuf.Type | undefined {
  const name = messageNameForKind(apiVersion, kind);
  return name === undefined ? undefined : messageType(name);
}

/** Every served apiVersion/kind pair (for tests and diagnostics). */
export function servedKindPairs(): { apiVersion: string; kind: string }[] {
  const out: { apiVersion: string; kind: string }[] = [];
  for (const [apiVersion, kinds] of servedKinds) {
    for (const kind of [...kinds.keys(), ...Object.keys(kindsInEveryVersion)]) out.push({ apiVersion, kind });
    if (statusVersions.has(apiVersion)) out.push({ apiVersion, kind: 'Status' });
  }
  for (const kind of Object.keys(unversionedKinds)) out.push({ apiVersion: UNVERSIONED_API_VERSION, kind });
  return out;
}
