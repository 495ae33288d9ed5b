/** Plain JSON shapes of API objects as they travel through the server (decoded, defaulted, stored). */

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [k: string]: JsonValue | undefined;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  apiVersion?: string;
  time?: string;
  fieldsType?: string;
  fieldsV1?: JsonObject;
  subresource?: string;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  selfLink?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string | null;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: ManagedFieldsEntry[];
}

/** A decoded API object. Kind-specific fields stay untyped here; each kind's hooks narrow them. */
export interface ApiObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

let formattedSecond = NaN;
let formatted = '';

/** RFC 3339 with whole seconds, as metav1.Time writes it (each write asks it twice or more: the text is kept per second). */
export function nowRFC3339(d = new Date()): string {
  const second = Math.floor(d.getTime() / 1000);
  if (second !== formattedSecond) {
    formatted = new Date(second * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    formattedSecond = second;
  }
  return formatted;
}

