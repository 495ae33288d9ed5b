/**
 * Which protobuf message each served apiVersion + kind is written as. Every group version also accepts
 * DeleteOptions (as upstream registers it in each), and Status is known under v1 and meta.svc.io/v1
 * (for error responses).
 */
import type protobuf from 'protobufjs';
import { canonicalSpelling, respellApiVersion } from '../../api/group-aliases.js';
import { META_V1, messageType } from './proto-root.js';

const CORE_V1 = 'svc.io.api.core.v1';
const STORAGE_V1 = 'svc.io.api.storage.v1';
const COORDINATION_V1 = 'svc.io.api.coordination.v1';
const AUTHENTICATION_V1 = 'svc.io.api.authentication.v1';

/** apiVersion -> kind -> message name. Each resource kind comes with its XList. */
const servedKinds: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  v1: withLists(CORE_V1, ['Namespace', 'ConfigMap', 'Secret', 'ServiceAccount', 'Event']),
  'storage.svc.io/v1': withLists(STORAGE_V1, ['CSIDriver']),
  'coordination.svc.io/v1': withLists(COORDINATION_V1, ['Lease']),
  'authentication.svc.io/v1': {
    SelfSubjectReview: `${AUTHENTICATION_V1}.SelfSubjectReview`,
    TokenReview: `${AUTHENTICATION_V1}.TokenReview`,
    TokenRequest: `${AUTHENTICATION_V1}.TokenRequest`,
  },
  'meta.svc.io/v1': {},
};

const kindsInEveryVersion: Readonly<Record<string, string>> = { DeleteOptions: `${META_V1}.DeleteOptions` };
const statusVersions = new Set(['v1', 'meta.svc.io/v1']);

function withLists(pkg: string, kinds: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of kinds) {
    out[k] = `${pkg}.${k}`;
    out[`${k}List`] = `${pkg}.${k}List`;
  }
  return out;
}

/** The message name for apiVersion + kind, or undefined when the pair is not served. */
export function messageNameForKind(spelledApiVersion: string, kind: string): string | undefined {
  // upstream's group spelling (storage.k8s.io) names the same messages as ours
  const apiVersion = respellApiVersion(spelledApiVersion, canonicalSpelling);
  const kinds = Object.hasOwn(servedKinds, apiVersion) ? servedKinds[apiVersion]! : undefined;
  if (!kinds) return undefined;
  if (Object.hasOwn(kinds, kind)) return kinds[kind];
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
  for (const [apiVersion, kinds] of Object.entries(servedKinds)) {
    for (const kind of [...Object.keys(kinds), ...Object.keys(kindsInEveryVersion)]) out.push({ apiVersion, kind });
    if (statusVersions.has(apiVersion)) out.push({ apiVersion, kind: 'Status' });
  }
  return out;
}
