/**
 * Cached objects as serializer input, and watch frames. A CachedObject is one stored version; its
 * list-item JSON, its decoded value and every encoding a serializer makes of it are memoized on it,
 * so each is built once however many readers and watchers ask. A FrameEncoder is one response form
 * of a watch (serializer, transform, group spelling): the watch cache memoizes each event's frame per
 * form, so an event is encoded once per form for all watchers.
 */
import type { Status } from '../api/status.js';
import { errors } from '../api/status.js';
import { encodeStored, parseStored, resourceVersionPlace, withResourceVersion } from '../codec/object-bytes.js';
import { type Respelling, respelledSource } from '../codec/respell.js';
import type { ObjectSource, Serializer, TypeInfo } from '../codec/serializer.js';
import type { ResourceType } from '../registry/resource-type.js';
import { type TransformRequest, transformObject } from '../registry/transform.js';
import { canonicalize } from '../schema/structural.js';
import { type CachedObject, type FrameVariant, keepsMemos, type WatchEventType } from '../storage/watch-cache.js';
import type { WatchFraming } from '../request/scope.js';

/**
 * The list-item JSON of a cached version (no TypeMeta, resourceVersion stamped), made for the caller
 * and not kept: a JSON list or object splices the stored bytes itself (ObjectSource.stored), and
 * the other forms keep their own encoding, so a copy kept per object (about its size again, for every
 * object a LIST had read) would serve no one.
 */
export function itemBytes(o: CachedObject): Buffer {
  return withResourceVersion(o.stored, o.revision);
}

/** The decoded list item of a cached version, shared by every reader while memos are kept. */
function decodedItem(o: CachedObject): Record<string, unknown> {
  if (o.decoded) return o.decoded as Record<string, unknown>;
  const value = JSON.parse(itemBytes(o).toString('utf8')) as Record<string, unknown>;
  if (keepsMemos(o)) o.decoded = value;
  return value;
}

/**
 * A cached version as serializer input; memos live on the CachedObject. A custom resource is shown as
 * `rt`'s version sees it (converted from the version it was stored in, defaulted): that view is built
 * once per object version and type revision, and its encodings are memoized under it.
 */
export function cachedSource(o: CachedObject, rt?: ResourceType): ObjectSource {
  if (rt?.custom) return customSource(o, rt);
  return keepsMemos(o) ? (o.source ??= new CachedSource(o)) : new CachedSource(o);
}

/** A built-in kind's cached version as serializer input: one small object, kept on the version, no closures. */
class CachedSource implements ObjectSource {
  constructor(private readonly o: CachedObject) {}
  itemJson(): Uint8Array {
    return itemBytes(this.o);
  }
  /** The stored bytes, and where their resourceVersion goes (found once a version: lists ask again and again). */
  stored(): { bytes: Uint8Array; revision: number; place: number } {
    const o = this.o;
    return { bytes: o.stored, revision: o.revision, place: (o.rvPlace ??= resourceVersionPlace(o.stored)) };
  }
  value(): Readonly<Record<string, unknown>> {
    return decodedItem(this.o);
  }
  memo(k: string): Uint8Array | undefined {
    return this.o.encodings?.get(k);
  }
  setMemo(k: string, b: Uint8Array): void {
    if (keepsMemos(this.o)) (this.o.encodings ??= new Map()).set(k, b);
  }
}

const viewKey = (rt: ResourceType): string => `${rt.custom!.revision}/${rt.version}`;

function customView(o: CachedObject, rt: ResourceType): { bytes: Buffer; item?: Buffer; value?: Record<string, unknown> } {
  const key = viewKey(rt);
  let v = o.views?.get(key);
  if (!v) {
    const obj = rt.custom!.fromStorageSync({ kind: rt.kind, ...parseStored(o.stored) });
    // a webhook conversion is done before encoding (prepareViews); reaching here without it is a bug
    if (!obj) throw errors.internal(new Error(`${rt.kind} ${o.name} was not converted to ${rt.version}`));
    v = { bytes: encodeStored(obj) };
    (o.views ??= new Map()).set(key, v);
  }
  return v;
}

const viewItem = (o: CachedObject, rt: ResourceType): Buffer => {
  const v = customView(o, rt);
  return (v.item ??= withResourceVersion(v.bytes, o.revision));
};

function customSource(o: CachedObject, rt: ResourceType): ObjectSource {
  const key = viewKey(rt);
  return {
    itemJson: () => viewItem(o, rt),
    value: () => {
      const v = customView(o, rt);
      return (v.value ??= JSON.parse(viewItem(o, rt).toString('utf8')) as Record<string, unknown>);
    },
    memo: (k) => o.encodings?.get(`${key}|${k}`),
    setMemo: (k, b) => void (o.encodings ??= new Map()).set(`${key}|${k}`, b),
  };
}

/**
 * Converts, in one batch, the cached versions `rt` cannot show without its conversion webhook, so that
 * encoding them afterwards needs no wait (reads and watches of such types await this first).
 */
export async function prepareViews(rt: ResourceType, objects: readonly (CachedObject | undefined)[]): Promise<void> {
  if (!rt.custom?.webhook) return;
  const key = viewKey(rt);
  const todo = objects.filter((o): o is CachedObject => !!o && !o.views?.has(key));
  if (!todo.length) return;
  const converted = await rt.custom.fromStorage(todo.map((o) => ({ kind: rt.kind, ...parseStored(o.stored) })));
  todo.forEach((o, i) => (o.views ??= new Map()).set(key, { bytes: encodeStored(converted[i]!) }));
}

export const INITIAL_EVENTS_END_ANNOTATION = 'svc.io/initial-events-end';
/** Upstream's key, which Go reflectors wait for: the bookmark carries both. */
export const UPSTREAM_INITIAL_EVENTS_END_ANNOTATION = 'k8s.io/initial-events-end';

/** How one watch writes its frames. */
export interface WatchForm {
  serializer: Serializer;
  typeInfo: TypeInfo;
  pretty: boolean;
  transform?: TransformRequest;
  /** The request's group spelling (an upstream alias). */
  respell?: Respelling;
  /** The transport's own event framing (gRPC); absent: the serializer's stream framing. */
  framing?: WatchFraming;
}

/** One frame of a watch form: the transport's framing if it has one, else the serializer's. */
const frameOf = (f: WatchForm, type: string, object: Uint8Array): Uint8Array => (f.framing ?? f.serializer).encodeWatchFrame(type, object);

/** The frame encoder of a watch form, keyed so that watches with the same form share frames. */
export function frameVariant(rt: ResourceType, f: WatchForm): FrameVariant {
  const t = f.transform;
  const key = `${f.serializer.id}|${f.typeInfo.apiVersion}|${t ? `${t.as}:${t.group}:${t.includeObject}` : ''}${rt.custom ? `|${rt.custom.revision}` : ''}${f.framing ? `|${f.framing.key}` : ''}`;
  return {
    key,
    encode: (type: WatchEventType, o: CachedObject) => frameOf(f, type, objectBytes(rt, f, cachedSource(o, rt))),
  };
}

function objectBytes(rt: ResourceType, f: WatchForm, cached: ObjectSource): Uint8Array {
  const src = f.respell ? respelledSource(cached, f.respell) : cached;
  if (f.transform) return f.serializer.encodeValue(transformObject(rt, f.transform, f.typeInfo, src), { pretty: false });
  return f.serializer.encodeObject(src, f.typeInfo, { pretty: false });
}

/** A BOOKMARK: an object of the kind holding only metadata.resourceVersion (and the initial-events-end annotation). */
export function bookmarkFrame(rt: ResourceType, f: WatchForm, revision: number, initialEventsEnd: boolean): Uint8Array {
  const meta: Record<string, unknown> = { resourceVersion: String(revision) };
  if (initialEventsEnd) meta.annotations = { [UPSTREAM_INITIAL_EVENTS_END_ANNOTATION]: 'true', [INITIAL_EVENTS_END_ANNOTATION]: 'true' };
  const canonical = canonicalize({ kind: rt.kind, apiVersion: f.typeInfo.apiVersion, metadata: meta }, rt.schema) as Record<string, unknown>;
  // a bookmark is written as the object itself, whatever the transform (upstream does the same)
  const value = f.transform?.as === 'PartialObjectMetadata' ? { kind: 'PartialObjectMetadata', apiVersion: `${f.transform.group}/${f.transform.version}`, metadata: canonical.metadata } : canonical;
  const bytes = f.transform?.as === 'PartialObjectMetadata' ? f.serializer.encodeValue(value, { pretty: false }) : f.serializer.encodeObject(valueOnly(value), f.typeInfo, { pretty: false });
  return frameOf(f, 'BOOKMARK', bytes);
}

const valueOnly = (v: Record<string, unknown>): ObjectSource => ({
  itemJson: () => Buffer.from(JSON.stringify((({ kind: _k, apiVersion: _a, ...rest }) => rest)(v))),
  value: () => v,
  memo: () => undefined,
  setMemo: () => undefined,
});

/** An ERROR event carrying a Status. */
export function errorFrame(f: WatchForm, status: Status): Uint8Array {
  return frameOf(f, 'ERROR', f.serializer.encodeValue(status as unknown as Record<string, unknown>, { pretty: false }));
}

/** An initial-state ADDED frame (not memoized on an event: each watch builds its own snapshot). */
export function addedFrame(rt: ResourceType, f: WatchForm, o: CachedObject): Uint8Array {
  return frameOf(f, 'ADDED', objectBytes(rt, f, cachedSource(o, rt)));
}
