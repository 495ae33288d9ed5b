/**
 * apiextensions.svc.io/v1 CustomResourceDefinition as it travels through the server (upstream's v1
 * shape), and the names and constants the definition's registry, controllers and builder share.
 */
import { type ApiObject, nowRFC3339 } from '../api/types.js';
import type { OpenApiV3Schema } from '../schema/openapi-v3.js';

export const APIEXTENSIONS_GROUP = 'apiextensions.svc.io';
/** Kept on a definition being deleted until every object of its resource is gone. */
export const CLEANUP_FINALIZER = 'customresourcecleanup.apiextensions.svc.io';
/** Annotation a definition in a protected group (`svc.io`, `*.svc.io`) must carry, as upstream's for `*.k8s.io`. */
export const API_APPROVED_ANNOTATION = 'api-approved.svc.io';

export interface CRDNames {
  plural: string;
  singular?: string;
  shortNames?: string[];
  kind: string;
  listKind?: string;
  categories?: string[];
}

export interface PrinterColumn {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
}

export interface ScaleSubresource {
  specReplicasPath: string;
  statusReplicasPath: string;
  labelSelectorPath?: string;
}

export interface CRDVersion {
  name: string;
  served: boolean;
  storage: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
  schema?: { openAPIV3Schema?: OpenApiV3Schema };
  subresources?: { status?: Record<string, never>; scale?: ScaleSubresource };
  additionalPrinterColumns?: PrinterColumn[];
  selectableFields?: { jsonPath: string }[];
}

export interface WebhookClientConfig {
  url?: string;
  service?: { namespace: string; name: string; path?: string; port?: number };
  caBundle?: string;
}

export interface CRDConversion {
  strategy: string;
  webhook?: { clientConfig?: WebhookClientConfig; conversionReviewVersions?: string[] };
}

export interface CRDCondition {
  type: string;
  status: string;
  lastTransitionTime?: string | null;
  reason?: string;
  message?: string;
}

export interface CustomResourceDefinition extends ApiObject {
  spec: {
    group: string;
    names: CRDNames;
    scope: string;
    versions: CRDVersion[];
    conversion?: CRDConversion;
    preserveUnknownFields?: boolean;
  };
  status?: {
    conditions?: CRDCondition[] | null;
    acceptedNames?: CRDNames;
    storedVersions?: string[] | null;
  };
}

export const condition = (crd: CustomResourceDefinition, type: string): CRDCondition | undefined => crd.status?.conditions?.find((c) => c.type === type);
export const isConditionTrue = (crd: CustomResourceDefinition, type: string): boolean => condition(crd, type)?.status === 'True';

/** The group's labels reversed, as OpenAPI definition names spell a group (`example.svc.io` -> `io.svc.example`). */
export const reversedGroup = (group: string): string => group.split('.').reverse().join('.');

/** Sets a condition, moving lastTransitionTime only when the status changes (upstream's SetCRDCondition). */
export function setCondition(crd: CustomResourceDefinition, c: CRDCondition, now: Date): void {
  crd.status ??= {};
  const conditions = (crd.status.conditions ??= []);
  const i = conditions.findIndex((x) => x.type === c.type);
  const old = i >= 0 ? conditions[i] : undefined;
  const next: CRDCondition = { ...c, lastTransitionTime: old && old.status === c.status ? (old.lastTransitionTime ?? nowRFC3339(now)) : nowRFC3339(now) };
  if (i >= 0) conditions[i] = next;
  else conditions.push(next);
}
