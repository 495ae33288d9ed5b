/**
 * The codecs in process, without a server: encode and decode of one CSIDriver and of a list of 1,000
 * ConfigMaps in JSON, YAML, protobuf and CBOR, through the serializer table the endpoints use. Encode
 * starts from the decoded object (a fresh object source each time, so no memo is reused: what a write
 * answer or the first reader of a new version costs); decode is the request-body reader (what a write
 * costs before validation). Each figure is the best of a few timed runs of at least 300 ms.
 */
import { cborShapeOf, registerCborKind } from '../../core/codec/cbor.js';
import { cborSerializer } from '../../core/codec/cbor-serializer.js';
import { jsonSerializer } from '../../core/codec/json-serializer.js';
import { registerProtobufKind } from '../../core/codec/protobuf/kinds.js';
import { protobufSerializer } from '../../core/codec/protobuf-serializer.js';
import { type ObjectSource, type Serializer, valueSource } from '../../core/codec/serializer.js';
import { yamlSerializer } from '../../core/codec/yaml-serializer.js';
import { builtinResourceTypes } from '../../core/registry/catalog.js';
import { apiVersionOf } from '../../core/registry/resource-type.js';

for (const rt of builtinResourceTypes) {
  if (rt.protobufPackage) registerProtobufKind(apiVersionOf(rt), rt.kind, rt.protobufPackage, !rt.virtual);
  registerCborKind(apiVersionOf(rt), rt.kind, cborShapeOf(rt.schema));
}

export interface CodecRow {
  subject: string;
  format: string;
  op: 'encode' | 'decode';
  bytes: number;
  objects: number;
  opsPerSec: number;
}

const managedFields = (fieldsV1: Record<string, unknown>) => [
  { manager: 'kubectl-client-side-apply', operation: 'Update', apiVersion: 'v1', time: '2026-11-22T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1 },
];

/** A CSIDriver as the server stores and answers it (defaults, managed fields). */
export const benchCsiDriver = {
  metadata: {
    name: 'bench.csi.example.com',
    uid: '0d3c8a52-7e1f-4c55-9b0e-6c2f1a3b4d5e',
    resourceVersion: '1234',
    generation: 1,
    creationTimestamp: '2026-11-22T00:00:00Z',
    managedFields: managedFields({ 'f:spec': { 'f:attachRequired': {}, 'f:podInfoOnMount': {}, 'f:tokenRequests': {}, 'f:volumeLifecycleModes': {} } }),
  },
  spec: {
    attachRequired: true,
    podInfoOnMount: true,
    volumeLifecycleModes: ['Persistent', 'Ephemeral'],
    storageCapacity: false,
    fsGroupPolicy: 'ReadWriteOnceWithFSType',
    tokenRequests: [{ audience: 'vault', expirationSeconds: 3600 }],
    requiresRepublish: false,
    seLinuxMount: false,
  },
};

/** The i-th ConfigMap of the bench's LIST (labels, 2 keys, managed fields). */
export const benchConfigMap = (i: number) => ({
  metadata: {
    name: `cm-${i}`,
    namespace: 'bench',
    uid: `6f1c0e1a-7c2e-4a55-9a0e-${String(i).padStart(12, '0')}`,
    resourceVersion: String(1000 + i),
    creationTimestamp: '2026-11-22T00:00:00Z',
    labels: { app: 'bench' },
    managedFields: managedFields({ 'f:data': { '.': {}, 'f:key': {}, 'f:other': {} }, 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } } }),
  },
  data: { key: `value-${i}`, other: 'x'.repeat(64) },
});

const CSI = { apiVersion: 'storage.svc.io/v1', kind: 'CSIDriver' };
const CM_LIST = { apiVersion: 'v1', kind: 'ConfigMapList' };
const o = { pretty: false };

/** Ops/s of one timed run of at least `ms`. */
function timed(fn: () => void, ms: number): number {
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ms) {
    fn();
    n++;
    if ((n & 3) === 0) t = performance.now();
  }
  return (n * 1000) / (performance.now() - t0);
}

/**
 * Best ops/s of each function over `rounds` rounds in which every function runs once in turn, so
 * that all of them meet the same load on a shared machine (after one warm-up round).
 */
function interleaved(fns: (() => void)[], rounds = 5, ms = 250): number[] {
  const best = fns.map(() => 0);
  for (let r = -1; r < rounds; r++) {
    fns.forEach((fn, i) => {
      const ops = timed(fn, ms);
      if (r >= 0) best[i] = Math.max(best[i]!, ops);
    });
  }
  return best;
}

const concat = (chunks: Iterable<Uint8Array>): Uint8Array => Buffer.concat([...chunks]);

export function codecBench(): CodecRow[] {
  const serializers: [string, Serializer][] = [
    ['JSON', jsonSerializer],
    ['YAML', yamlSerializer],
    ['protobuf', protobufSerializer],
    ['CBOR', cborSerializer],
  ];
  const items = Array.from({ length: 1000 }, (_, i) => benchConfigMap(i));
  const sources = (): ObjectSource[] => items.map((v) => valueSource(v));
  const meta = { resourceVersion: '9999' };
  const rows: CodecRow[] = [];
  const subjects = [
    {
      subject: 'one CSIDriver',
      objects: 1,
      encode: (s: Serializer) => () => s.encodeObject(valueSource(benchCsiDriver), CSI, o),
    },
    {
      subject: '1,000 ConfigMaps',
      objects: 1000,
      encode: (s: Serializer) => () => concat(s.encodeList(CM_LIST, meta, sources(), o)),
    },
  ];
  for (const subj of subjects) {
    const encoded = serializers.map(([, s]) => {
      const b = subj.encode(s)();
      return b instanceof Uint8Array ? b : new Uint8Array(0);
    });
    const enc = interleaved(serializers.map(([, s]) => subj.encode(s)));
    // a body a server would refuse (a YAML list past the YAML token budget) is not timed
    const decodes = serializers.map(([, s], i) => {
      try {
        s.decodeBody(encoded[i]!);
        return true;
      } catch {
        return false;
      }
    });
    const dec = interleaved(serializers.map(([, s], i) => (decodes[i] ? () => s.decodeBody(encoded[i]!) : () => undefined)));
    serializers.forEach(([format], i) => {
      rows.push({ subject: subj.subject, format, op: 'encode', bytes: encoded[i]!.length, objects: subj.objects, opsPerSec: enc[i]! });
      rows.push({ subject: subj.subject, format: decodes[i] ? format : `${format} (refused: past the body budget)`, op: 'decode', bytes: encoded[i]!.length, objects: subj.objects, opsPerSec: decodes[i] ? dec[i]! : 0 });
    });
  }
  return rows;
}
