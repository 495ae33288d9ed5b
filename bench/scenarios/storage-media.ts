/**
 * The storage media type in process, without a store: what the layer adds to one write (encode to the
 * media type and the check that it reads back as the same bytes) and to one read (a watch event or a
 * store read decoded back to the JSON stored form), for the ConfigMap the etcd load creates and a
 * CSIDriver with managed fields; and the stored size. Each figure is the best of a few timed runs.
 */
import type { ApiObject } from '../../core/api/types.js';
import { encodeStored } from '../../core/codec/object-bytes.js';
import { objectKey } from '../../core/registry/keys.js';
import { storedKindOfKey } from '../../core/registry/stored-kinds.js';
import { builtinResourceTypes } from '../../core/registry/catalog.js';
import { apiVersionOf } from '../../core/registry/resource-type.js';
import { canonicalize } from '../../core/schema/structural.js';
import { MediaTypeCodec, type StorageForm } from '../../core/storage/media-type.js';
import { benchCsiDriver } from './codecs.js';

export interface StorageMediaRow {
  subject: string;
  form: StorageForm;
  bytes: number;
  writeUs: number;
  readUs: number;
}

/** Microseconds per call of `fn`: the best of 5 runs of at least 200 ms. */
function usPerCall(fn: () => void): number {
  let best = Infinity;
  for (let run = 0; run < 5; run++) {
    let n = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0;
    while (elapsed < 200e6) {
      for (let i = 0; i < 200; i++) fn();
      n += 200;
      elapsed = Number(process.hrtime.bigint() - start);
    }
    best = Math.min(best, elapsed / n / 1000);
  }
  return best;
}

function storedOf(kind: string, obj: Record<string, unknown>): { key: string; json: Buffer } {
  const rt = builtinResourceTypes.find((t) => t.kind === kind)!;
  const canonical = canonicalize({ kind, apiVersion: apiVersionOf(rt), ...structuredClone(obj) } as ApiObject, rt.schema);
  return { key: objectKey(rt, canonical.metadata.namespace ?? '', canonical.metadata.name!), json: encodeStored(canonical) };
}

export function storageMediaCost(): StorageMediaRow[] {
  const subjects = [
    {
      subject: 'ConfigMap (the etcd load’s)',
      ...storedOf('ConfigMap', {
        metadata: { name: 'cm-x7k2p', generateName: 'cm-', namespace: 'default', uid: '0d3c8a52-7e1f-4c55-9b0e-6c2f1a3b4d5e', creationTimestamp: '2026-11-27T00:00:00Z', labels: { app: 'bench' },
          managedFields: [{ manager: 'unknown', operation: 'Update', apiVersion: 'v1', time: '2026-11-27T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { '.': {}, 'f:key': {}, 'f:other': {} }, 'f:metadata': { 'f:generateName': {}, 'f:labels': { '.': {}, 'f:app': {} } } } }] },
        data: { key: 'value', other: 'x'.repeat(64) },
      }),
    },
    { subject: 'CSIDriver (managed fields)', ...storedOf('CSIDriver', benchCsiDriver as Record<string, unknown>) },
  ];
  const rows: StorageMediaRow[] = [];
  for (const s of subjects) {
    for (const form of ['json', 'protobuf', 'yaml'] as const) {
      const codec = new MediaTypeCodec(form, storedKindOfKey);
      const stored = codec.toStored(s.key, s.json);
      rows.push({ subject: s.subject, form, bytes: stored.length, writeUs: usPerCall(() => codec.toStored(s.key, s.json)), readUs: usPerCall(() => codec.fromStored(s.key, stored)) });
    }
  }
  return rows;
}
