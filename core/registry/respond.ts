/**
 * Encodes operation results and errors in a response form (serializer, transform): the same code on
 * the main thread (cache-served reads, reviews) and in pool workers (writes, store-served lists).
 */
import { type Status, type StatusError, toStatusError } from '../api/status.js';
import '../codec/cbor-serializer.js';
import '../codec/json-serializer.js';
import '../codec/protobuf-serializer.js';
import '../codec/yaml-serializer.js';
import { bytesSource, type ListMeta, type ObjectSource, type Serializer, serializerFor, storedSource, type TypeInfo, valueSource } from '../codec/serializer.js';
import { jsonSerializer } from '../codec/json-serializer.js';
import { withResourceVersion } from '../codec/object-bytes.js';
import { type Respelling, respelledOneByOne, respelledSource, respellStatus } from '../codec/respell.js';
import type { OpResult } from './context.js';
import { apiVersionOf, type ResourceType } from './resource-type.js';
import type { ResponseForm } from './task.js';
import { transformList, transformObject } from './transform.js';

export const serializerOf = (form: ResponseForm): Serializer => serializerFor(form.mediaType) ?? jsonSerializer;

/** The apiVersion of `rt` as the answer spells it (an upstream alias spells the group its way). */
const spelledApiVersion = (rt: ResourceType, r: Respelling | undefined): string => (r && rt.group === r.from ? `${r.to}/${rt.version}` : apiVersionOf(rt));

export const typeInfoOf = (rt: ResourceType, r?: Respelling): TypeInfo => ({ apiVersion: spelledApiVersion(rt, r), kind: rt.kind });
const listTypeInfoOf = (rt: ResourceType, r?: Respelling): TypeInfo => ({ apiVersion: spelledApiVersion(rt, r), kind: `${rt.kind}List` });

/** A source as the form spells it. */
export const spelled = (src: ObjectSource, form: Pick<ResponseForm, 'respell'>): ObjectSource => (form.respell ? respelledSource(src, form.respell) : src);

function* spelledAll(items: Iterable<ObjectSource>, r: Respelling): Generator<ObjectSource> {
  for (const it of items) yield respelledSource(it, r);
}

/** One object of `rt` in the form asked for. */
export function encodeObjectIn(rt: ResourceType, form: ResponseForm, src: ObjectSource): Uint8Array {
  const s = serializerOf(form);
  const o = { pretty: form.pretty };
  const t = typeInfoOf(rt, form.respell);
  if (form.transform) return s.encodeValue(transformObject(rt, form.transform, t, spelled(src, form)), o);
  return s.encodeObject(spelled(src, form), t, o);
}

/** A page of a list of `rt` in the form asked for, as chunks. */
export function encodeListIn(rt: ResourceType, form: ResponseForm, meta: ListMeta, items: Iterable<ObjectSource>): Iterable<Uint8Array> {
  const s = serializerOf(form);
  const o = { pretty: form.pretty };
  // a transform keeps the items it is given; a serializer is done with each before the next
  if (form.transform) return [s.encodeValue(transformList(rt, form.transform, typeInfoOf(rt, form.respell), form.respell ? spelledAll(items, form.respell) : items, meta), o)];
  return s.encodeList(listTypeInfoOf(rt, form.respell), meta, form.respell ? respelledOneByOne(items, form.respell) : items, o);
}

/** A plain value (Status, review answers): the transform does not apply. */
export function encodeValueIn(form: ResponseForm, v: Readonly<Record<string, unknown>>): Uint8Array {
  return serializerOf(form).encodeValue(v, { pretty: form.pretty });
}

function* sourcesOf(items: readonly Uint8Array[]): Generator<ObjectSource> {
  for (const b of items) yield bytesSource(b);
}

export function encodeResult(rt: ResourceType, r: OpResult, form: ResponseForm): Uint8Array {
  const b = r.body;
  if ('stored' in b) return encodeObjectIn(rt, form, storedSource(b.stored, b.revision, withResourceVersion));
  if ('value' in b) {
    const v = b.value as Record<string, unknown>;
    // a kind's object given as a value (no stored bytes) is still written as that kind
    if (v.kind === rt.kind) return encodeObjectIn(rt, form, valueSource(v));
    return encodeValueIn(form, v);
  }
  const meta: ListMeta = { resourceVersion: b.list.resourceVersion };
  if (b.list.continue) meta.continue = b.list.continue;
  if (b.list.remainingItemCount !== undefined) meta.remainingItemCount = b.list.remainingItemCount;
  return Buffer.concat([...encodeListIn(rt, form, meta, sourcesOf(b.list.items))]);
}

/** A Status in the form's serializer (never transformed: errors of a Table request are Status objects). */
export function encodeError(err: unknown, form: ResponseForm): { code: number; body: Uint8Array; headers: Record<string, string>; error: StatusError } {
  const e = toStatusError(err);
  const status = form.respell ? respellStatus(e.status, form.respell) : e.status;
  return { code: e.code, body: encodeValueIn(form, status as unknown as Record<string, unknown>), headers: e.headers, error: e };
}

/** Content-Type of an error answer: the serializer's, without transform parameters. */
export const errorContentType = (form: ResponseForm): string => (form.transform ? serializerOf(form).mediaType : form.contentType);

export type { Status };
