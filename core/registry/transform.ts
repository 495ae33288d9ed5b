/**
 * The transform step: representations other than the object itself, built before the serializer and
 * apart from it (upstream's transformResponseObject). A Table (meta/v1) has the kind's column
 * definitions and one row per object with its cells and, per `includeObject`, nothing, the object's
 * metadata as a PartialObjectMetadata (the default) or the whole object. PartialObjectMetadata and
 * PartialObjectMetadataList carry metadata only, for clients that need nothing else (garbage
 * collectors, namespace cleanup). The answer's meta group is spelled as the client asked.
 */
import { errors } from '../api/status.js';
import type { ApiObject } from '../api/types.js';
import { listMetaValue } from '../codec/json-serializer.js';
import type { TransformChoice } from '../codec/negotiate.js';
import { itemValue, type ListMeta, type ObjectSource, type TypeInfo } from '../codec/serializer.js';
import type { ResourceType, TableColumn } from './resource-type.js';

export type IncludeObject = 'None' | 'Metadata' | 'Object';

export interface TransformRequest extends TransformChoice {
  includeObject: IncludeObject;
}

/** `includeObject` from the query; upstream's error for anything else. */
export function includeObjectFromQuery(query: URLSearchParams): IncludeObject {
  const v = query.get('includeObject');
  if (v === null || v === '') return 'Metadata';
  if (v === 'None' || v === 'Metadata' || v === 'Object') return v;
  throw errors.badRequest(`Invalid value: ${JSON.stringify(v)}: includeObject: must be 'Metadata', 'Object' or 'None'`);
}

/** Columns of kinds without their own: the object's name and creation time. */
const defaultColumns: readonly TableColumn[] = [
  { name: 'Name', type: 'string', format: 'name', description: 'Name of the object, unique within its namespace (or the cluster).', cell: (o) => o.metadata?.name ?? '' },
  { name: 'Created At', type: 'date', description: 'When the object was created (metadata.creationTimestamp).', cell: (o) => o.metadata?.creationTimestamp ?? null },
];

const columnsOf = (rt: ResourceType): readonly TableColumn[] => rt.tableColumns ?? defaultColumns;

function columnDefinition(c: TableColumn): Record<string, unknown> {
  const d: Record<string, unknown> = { name: c.name, type: c.type, format: c.format ?? '', description: c.description, priority: c.priority ?? 0 };
  return d;
}

const metaApiVersion = (t: TransformChoice): string => `${t.group}/${t.version}`;

function partial(t: TransformChoice, v: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return { kind: 'PartialObjectMetadata', apiVersion: metaApiVersion(t), metadata: v.metadata };
}

function row(rt: ResourceType, t: TransformRequest, typeInfo: TypeInfo, src: ObjectSource): Record<string, unknown> {
  const v = src.value();
  const obj = v as unknown as ApiObject;
  const r: Record<string, unknown> = { cells: columnsOf(rt).map((c) => c.cell(obj) ?? null) };
  if (t.includeObject === 'Metadata') r.object = partial(t, v);
  else if (t.includeObject === 'Object') r.object = { kind: typeInfo.kind, apiVersion: typeInfo.apiVersion, ...itemValue(v) };
  return r;
}

/** The Table of one object (get, and each watch event) or of a page of a list. */
export function toTable(rt: ResourceType, t: TransformRequest, typeInfo: TypeInfo, objects: Iterable<ObjectSource>, meta: ListMeta): Record<string, unknown> {
  const rows: Record<string, unknown>[] = [];
  for (const o of objects) rows.push(row(rt, t, typeInfo, o));
  return { kind: 'Table', apiVersion: metaApiVersion(t), metadata: listMetaValue(meta), columnDefinitions: columnsOf(rt).map(columnDefinition), rows };
}

/** The metadata-only view of one object. */
export function toPartialObjectMetadata(t: TransformChoice, src: ObjectSource): Record<string, unknown> {
  return partial(t, src.value());
}

/** The metadata-only view of a page of a list. */
export function toPartialObjectMetadataList(t: TransformChoice, objects: Iterable<ObjectSource>, meta: ListMeta): Record<string, unknown> {
  const items: Record<string, unknown>[] = [];
  for (const o of objects) items.push(partial(t, o.value()));
  return { kind: 'PartialObjectMetadataList', apiVersion: metaApiVersion(t), metadata: listMetaValue(meta), items };
}

/** One object in the representation asked for (get and watch events). */
export function transformObject(rt: ResourceType, t: TransformRequest, typeInfo: TypeInfo, src: ObjectSource): Record<string, unknown> {
  if (t.as === 'Table') {
    const rv = (src.value().metadata as { resourceVersion?: string } | undefined)?.resourceVersion ?? '';
    return toTable(rt, t, typeInfo, [src], { resourceVersion: rv });
  }
  return toPartialObjectMetadata(t, src);
}

/** A page of a list in the representation asked for. */
export function transformList(rt: ResourceType, t: TransformRequest, typeInfo: TypeInfo, objects: Iterable<ObjectSource>, meta: ListMeta): Record<string, unknown> {
  return t.as === 'Table' ? toTable(rt, t, typeInfo, objects, meta) : toPartialObjectMetadataList(t, objects, meta);
}
