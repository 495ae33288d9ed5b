/**
 * The fuzzer's engine, shared by `npm run fuzz` (bench/fuzz.ts) and the deterministic slice in the
 * test suite: a seeded generator of mutated requests (bodies of every content type for POST, PUT and
 * PATCH of namespaces, ConfigMaps and CSIDrivers; mutated queries, paths and headers on reads and
 * writes) sent to a real server process, and after every case the checks issue 7 asks for: no 5xx
 * (every input is the client's), a rejected write (or a dry run) changed nothing (a write of the
 * fuzzer's own right after it gets the very next revision), every error is a Status, the process is alive
 * and its RSS under a bound. Case generation depends on the seed only, never on answers, so a seed
 * replays the same cases.
 */
import { Agent, request as httpsRequest } from 'node:https';
import { encodeProtobufObject } from '../../core/codec/protobuf.js';
import { peakRssMiB, rssMiB } from '../../bench/lib.js';
import { ADMIN_TOKEN, type SpawnedServer } from './server.js';

/** xoshiro128** over a 32-bit seed (splitmix32 spreads it): small, fast, reproducible. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  constructor(seed: number) {
    let x = seed >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
  }
  /** A uniform 32-bit integer. */
  u32(): number {
    const m = Math.imul(this.b, 5);
    const r = Math.imul((m << 7) | (m >>> 25), 9) >>> 0;
    const t = this.b << 9;
    this.c ^= this.a;
    this.d ^= this.b;
    this.b ^= this.c;
    this.a ^= this.d;
    this.c ^= t;
    this.d = (this.d << 11) | (this.d >>> 21);
    return r;
  }
  /** An integer in [0, n). */
  int(n: number): number {
    return n <= 1 ? 0 : this.u32() % n;
  }
  chance(p: number): boolean {
    return this.u32() / 2 ** 32 < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
}

// ---------------------------------------------------------------------------------------------
// What is fuzzed

export type BodyType = 'json' | 'yaml' | 'protobuf' | 'json-patch' | 'merge-patch' | 'strategic-merge-patch' | 'apply-yaml' | 'none';
export const bodyTypes: readonly BodyType[] = ['json', 'yaml', 'protobuf', 'json-patch', 'merge-patch', 'strategic-merge-patch', 'apply-yaml'];

const contentTypes: Record<Exclude<BodyType, 'none'>, string> = {
  json: 'application/json',
  yaml: 'application/yaml',
  protobuf: 'application/vnd.svc.protobuf',
  'json-patch': 'application/json-patch+json',
  'merge-patch': 'application/merge-patch+json',
  'strategic-merge-patch': 'application/strategic-merge-patch+json',
  'apply-yaml': 'application/apply-patch+yaml',
};

interface Kind {
  name: string;
  apiVersion: string;
  kind: string;
  collection: string;
  /** A valid object named `name`. */
  object(rng: Rng, name: string): Record<string, unknown>;
}

export const FUZZ_NAMESPACE = 'fuzz';

const labels = (rng: Rng): Record<string, string> => (rng.chance(0.5) ? { app: 'fuzz', tier: rng.pick(['a', 'b', 'c']) } : {});

const kinds: readonly Kind[] = [
  {
    name: 'namespaces',
    apiVersion: 'v1',
    kind: 'Namespace',
    collection: '/api/v1/namespaces',
    object: (rng, name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: labels(rng) }, spec: { finalizers: ['svc'] } }),
  },
  {
    name: 'configmaps',
    apiVersion: 'v1',
    kind: 'ConfigMap',
    collection: `/api/v1/namespaces/${FUZZ_NAMESPACE}/configmaps`,
    object: (rng, name) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: FUZZ_NAMESPACE, labels: labels(rng), annotations: { note: 'x' }, finalizers: rng.chance(0.2) ? ['example.com/f'] : undefined },
      data: { a: '1', b: 'two', 'c.d': rng.pick(['', 'x', 'ünï']) },
      binaryData: rng.chance(0.5) ? { bin: 'AAEC' } : undefined,
    }),
  },
  {
    name: 'csidrivers',
    apiVersion: 'storage.svc.io/v1',
    kind: 'CSIDriver',
    collection: '/apis/storage.svc.io/v1/csidrivers',
    object: (rng, name) => ({
      apiVersion: 'storage.svc.io/v1',
      kind: 'CSIDriver',
      metadata: { name, labels: labels(rng) },
      spec: {
        attachRequired: true,
        podInfoOnMount: rng.chance(0.5),
        volumeLifecycleModes: ['Persistent'],
        fsGroupPolicy: 'File',
        tokenRequests: rng.chance(0.5) ? [{ audience: 'a', expirationSeconds: 3600 }] : undefined,
        requiresRepublish: false,
      },
    }),
  },
];

/** The named objects PUT and PATCH aim at (generation `g`, so a fresh set can replace spoiled ones). */
export const targetName = (k: Kind, g: number, i: number): string => `fuzz-${k.name.slice(0, 3)}-${g}-${i}`;
const TARGETS = 3;

// ---------------------------------------------------------------------------------------------
// Mutations

const oddStrings = [
  '',
  ' ',
  'x\u0000y',
  '\u0001\u0002\u0007',
  '\ud800',
  'ünï€',
  '\u{1f600}',
  '$patch',
  '$retainKeys',
  '$setElementOrder/finalizers',
  '$deleteFromPrimitiveList/finalizers',
  '__proto__',
  'constructor',
  'toString',
  '../..',
  '%00',
  '-1',
  'true',
  'null',
  '"quoted"',
  'a\\b',
  '\t\n\r',
  '<<',
  '*a',
  '&a',
  '!!binary',
];

function randomString(rng: Rng): string {
  switch (rng.int(6)) {
    case 0:
      return rng.pick(oddStrings);
    case 1:
      return 'x'.repeat(rng.pick([63, 64, 253, 254, 1000, 2000, 5000]));
    case 2:
      return String.fromCharCode(...Array.from({ length: 1 + rng.int(12) }, () => rng.int(0x3000)));
    case 3:
      return `fz-${rng.u32().toString(36)}`;
    default:
      return rng.pick(['a', 'svc', 'kubernetes', 'example.com/f', 'Persistent', 'Ephemeral', 'File', 'None', 'v1', 'default', FUZZ_NAMESPACE]);
  }
}

/** A value nested `depth` levels (arrays or objects). */
function nested(rng: Rng, depth: number): unknown {
  const obj = rng.chance(0.5);
  let v: unknown = rng.chance(0.5) ? null : 1;
  for (let i = 0; i < depth; i++) v = obj ? { a: v } : [v];
  return v;
}

function randomValue(rng: Rng, depth = 0): unknown {
  switch (rng.int(depth > 2 ? 7 : 10)) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return rng.pick([0, -1, 1.5, 2 ** 31, 2 ** 53 + 2, -(2 ** 63), 1e308, -0, 3600, 600, 86400 * 365]);
    case 3:
    case 4:
    case 5:
      return randomString(rng);
    case 6:
      return nested(rng, rng.pick([2, 50, 600, 3000, 9990, 10001, 30000]));
    case 7:
      return Array.from({ length: rng.int(4) }, () => randomValue(rng, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = rng.int(4); i > 0; i--) o[randomString(rng)] = randomValue(rng, depth + 1);
      return o;
    }
  }
}

/** Paths into a value, for structural mutations. */
function paths(v: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = [], depth = 0): (string | number)[][] {
  out.push(prefix);
  if (depth > 6 || out.length > 2000 || v === null || typeof v !== 'object') return out;
  if (Array.isArray(v)) v.forEach((x, i) => paths(x, [...prefix, i], out, depth + 1));
  else for (const k of Object.keys(v)) paths((v as Record<string, unknown>)[k], [...prefix, k], out, depth + 1);
  return out;
}

function parentOf(root: unknown, path: (string | number)[]): { parent: Record<string | number, unknown> | undefined; key: string | number | undefined } {
  let cur = root as Record<string | number, unknown>;
  for (let i = 0; i < path.length - 1; i++) cur = cur[path[i]!] as Record<string | number, unknown>;
  return path.length ? { parent: cur, key: path[path.length - 1] } : { parent: undefined, key: undefined };
}

/** One structural mutation of a JSON-like document (in place; the root may be replaced). */
function mutateValue(rng: Rng, doc: unknown, light: boolean): unknown {
  const all = paths(doc);
  const at = rng.pick(all);
  const { parent, key } = parentOf(doc, at);
  const op = rng.int(9);
  if (!parent || key === undefined) return op < 2 ? randomValue(rng) : doc;
  const cur = parent[key];
  switch (op) {
    case 0: // replace with any value
      parent[key] = randomValue(rng);
      break;
    case 1: // delete
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else delete parent[key];
      break;
    case 2: // add a member or item
      if (cur && typeof cur === 'object' && !Array.isArray(cur)) (cur as Record<string, unknown>)[randomString(rng)] = randomValue(rng);
      else if (Array.isArray(cur)) cur.push(randomValue(rng));
      else parent[key] = { [randomString(rng)]: cur };
      break;
    case 3: // change the type
      parent[key] = cur === null ? 'x' : typeof cur === 'string' ? rng.pick([1, true, [cur], { v: cur }]) : Array.isArray(cur) ? (cur[0] ?? {}) : typeof cur === 'object' ? [cur] : String(cur);
      break;
    case 4: // nest deep
      parent[key] = nested(rng, rng.pick([100, 600, 2000, 9990, 10001, 50000]));
      break;
    case 5: // a big value (now and then: they cost the most to send)
      if (rng.chance(0.25)) parent[key] = rng.chance(0.7) ? 'x'.repeat(rng.pick(light ? [10_000, 100_000] : [100_000, 1_100_000, 3_200_000])) : Array.from({ length: rng.pick(light ? [1_000, 10_000] : [10_000, 200_000]) }, (_, i) => i);
      else parent[key] = randomValue(rng);
      break;
    case 6: // metadata that matters to the registry
      parent[key] = rng.pick([{ resourceVersion: rng.pick(['1', '0', 'x', '999999999', '-1']) }, { uid: randomString(rng) }, { generateName: randomString(rng) }, { managedFields: randomValue(rng) }, { deletionTimestamp: '2020-01-01T00:00:00Z' }, { ownerReferences: randomValue(rng) }]);
      break;
    case 7: // a strategic merge patch directive
      parent[key] = rng.pick([{ $patch: rng.pick(['replace', 'delete', 'merge', 'bogus', 1, null]) }, { $retainKeys: randomValue(rng) }, { '$setElementOrder/finalizers': randomValue(rng) }, { '$deleteFromPrimitiveList/finalizers': randomValue(rng) }, cur]);
      break;
    default: {
      // a copy of another subtree (a copy: an ancestor put below itself would make a cycle)
      let src: unknown = doc;
      for (const step of rng.pick(all)) src = (src as Record<string | number, unknown>)[step];
      parent[key] = JSON.parse(jsonText(src));
    }
  }
  return doc;
}

/**
 * JSON text of any value at any depth (JSON.stringify stops at a few thousand levels): containers
 * are opened and closed from an explicit stack. The fuzzer writes its own, so it does not lean on
 * the code it tests.
 */
export function jsonText(v: unknown): string {
  const out: string[] = [];
  const stack: { items: [string, unknown][]; i: number; close: string }[] = [];
  let next: unknown = v;
  let pending = true;
  for (;;) {
    if (pending) {
      pending = false;
      const x = next;
      if (Array.isArray(x)) {
        out.push('[');
        stack.push({ items: x.map((y) => ['', y === undefined ? null : y]), i: 0, close: ']' });
      } else if (x !== null && typeof x === 'object') {
        out.push('{');
        const o = x as Record<string, unknown>;
        stack.push({ items: Object.keys(o).filter((k) => o[k] !== undefined).map((k) => [`${JSON.stringify(k)}:`, o[k]]), i: 0, close: '}' });
      } else out.push(JSON.stringify(x) ?? 'null');
      continue;
    }
    const top = stack[stack.length - 1];
    if (!top) return out.join('');
    if (top.i < top.items.length) {
      if (top.i > 0) out.push(',');
      const [prefix, value] = top.items[top.i++]!;
      out.push(prefix);
      next = value;
      pending = true;
    } else {
      stack.pop();
      out.push(top.close);
    }
  }
}

/** JSON text, sometimes with a duplicated member or a number Go and JS read differently. */
function toJsonText(rng: Rng, v: unknown): string {
  // the project's own Go-style encoder: it walks any depth (JSON.stringify stops at a few thousand)
  let text = jsonText(v);
  if (rng.chance(0.1)) {
    const m = /"([^"\\]{1,40})":("[^"\\]*"|[0-9.e+-]+|true|false|null)/.exec(text);
    if (m) text = text.replace(m[0], `${m[0]},${m[0]}`);
  }
  if (rng.chance(0.03)) text = text.replace(/:1([,}])/, ':1e400$1');
  return text;
}

/** YAML text for a value (flow style via JSON, or block style), with YAML's own hazards mixed in. */
function toYamlText(rng: Rng, v: unknown, light: boolean): string {
  let text = rng.chance(0.4) ? toJsonText(rng, v) : blockYaml(v, '', 0);
  if (rng.chance(0.3)) {
    const hazards = [
      'x: &a [1, 2]\ny: *a\n',
      'x: *missing\n',
      'x: &s [1, *s]\n',
      `${['a: &a [x, x, x, x, x, x, x, x, x]', ...Array.from({ length: 7 }, (_, i) => `${'bcdefgh'[i]}: &${'bcdefgh'[i]} [${Array(9).fill(`*${'abcdefg'[i]}`).join(', ')}]`)].join('\n')}\n`,
      'x:\n  <<: {p: 1}\n  <<: [*a]\n',
      'x: !!binary ////\n',
      'x: !!set {a, b}\n',
      'x: !foo bar\n',
      '---\nx: 1\n',
      'x:\n\t- tab\n',
      `x: ${'['.repeat(rng.pick([100, 499, 501, 5000]))}\n`,
      `x:\n${'- '.repeat(rng.pick([100, 499, 501, 5000]))}1\n`,
      `x: [${'1,'.repeat(rng.pick(light ? [1000, 2000] : [1000, 60000]))}]\n`,
      '? [a, b]\n: c\n',
      'x: "\\x01\\u00e9"\n',
      '%YAML 1.1\n---\n',
      'x: 0777\ny: 0x1f\nz: 1_000\nw: .inf\nv: yes\n',
    ];
    const h = rng.pick(hazards);
    text = rng.chance(0.5) ? `${text}\n${h}` : h + text;
  }
  return text;
}

function blockYaml(v: unknown, indent: string, depth: number): string {
  if (depth > 30 || v === null || typeof v !== 'object') return `${jsonText(v)}\n`;
  if (Array.isArray(v)) return v.length ? '\n' + v.map((x) => `${indent}- ${blockYaml(x, `${indent}  `, depth + 1).trimStart()}`).join('') : '[]\n';
  const keys = Object.keys(v);
  if (!keys.length) return '{}\n';
  return (depth ? '\n' : '') + keys.map((k) => `${indent}${JSON.stringify(k)}: ${blockYaml((v as Record<string, unknown>)[k], `${indent}  `, depth + 1).trimStart()}`).join('');
}

/** Byte-level damage to a serialized body. */
function mutateBytes(rng: Rng, b: Buffer): Buffer {
  if (b.length === 0) return Buffer.from(rng.pick(['{', '[', 'null', '\u0000', '---']));
  const i = rng.int(b.length);
  switch (rng.int(8)) {
    case 0:
      return Buffer.concat([b.subarray(0, i), Buffer.from([rng.int(256)]), b.subarray(i + 1)]);
    case 1:
      return b.subarray(0, i);
    case 2:
      return Buffer.concat([b.subarray(0, i), Buffer.from(Array.from({ length: 1 + rng.int(8) }, () => rng.int(256))), b.subarray(i)]);
    case 3:
      return Buffer.concat([b.subarray(0, i), b.subarray(i + 1 + rng.int(16))]);
    case 4:
      return Buffer.concat([b.subarray(0, i), b.subarray(i, i + 1 + rng.int(64)), b.subarray(i)]);
    case 5:
      return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), b]);
    case 6:
      return Buffer.concat([b.subarray(0, i), Buffer.from(rng.pick(['\u0000', '\ud800', '\u00ff', '\\u0000', '\\ud800', '"', '\\', '{', ']', ',', ':', '\n\t']), 'utf8'), b.subarray(i)]);
    default:
      return Buffer.concat([b.subarray(0, i), Buffer.from([0xc3]), b.subarray(i)]); // a broken UTF-8 sequence
  }
}

// ---------------------------------------------------------------------------------------------
// Cases

export interface FuzzCase {
  bodyType: BodyType;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** A write: the store must not change unless it succeeded (and not even then on a dry run). */
  write: boolean;
  dryRun: boolean;
}

/** Percent-encoding of any string (unpaired surrogates become U+FFFD, as their UTF-8 bytes do). */
const enc = (s: string): string => encodeURIComponent(Buffer.from(s, 'utf8').toString('utf8'));

function query(rng: Rng, forWrite: boolean, apply: boolean): string {
  const q: string[] = [];
  if (apply || (forWrite && rng.chance(0.3))) q.push(`fieldManager=${enc(rng.chance(0.8) ? 'fuzz' : randomString(rng))}`);
  if (forWrite && rng.chance(0.3)) q.push(`fieldValidation=${rng.pick(['Strict', 'Warn', 'Ignore', 'bogus', ''])}`);
  if (forWrite && rng.chance(0.15)) q.push(`dryRun=${rng.pick(['All', 'All', 'bogus', ''])}`);
  if (apply && rng.chance(0.3)) q.push(`force=${rng.pick(['true', 'false', 'x'])}`);
  if (rng.chance(0.1)) q.push(`pretty=${rng.pick(['true', '1', 'x'])}`);
  if (rng.chance(0.05)) q.push(`timeout=${rng.pick(['1s', 'x', '-1s', '0'])}`);
  if (!forWrite) {
    if (rng.chance(0.3)) q.push(`labelSelector=${enc(rng.pick(['app=fuzz', 'app in (a,b)', '!app', 'a==b==c', 'x'.repeat(300), '=', 'app notin ()', randomString(rng)]))}`);
    if (rng.chance(0.3)) q.push(`fieldSelector=${enc(rng.pick(['metadata.name=x', 'metadata.namespace!=fuzz', 'spec.x=1', 'metadata.name==', randomString(rng)]))}`);
    if (rng.chance(0.3)) q.push(`limit=${rng.pick(['1', '0', '-1', '500', '99999999999', 'x'])}`);
    if (rng.chance(0.2)) q.push(`continue=${enc(rng.pick(['x', 'eyJ2IjoxfQ', randomString(rng)]))}`);
    // a resourceVersion ahead of the store is answered (as upstream) with a 504 after a wait: rarely
    if (rng.chance(0.3)) q.push(`resourceVersion=${rng.chance(0.05) ? '999999999' : rng.pick(['0', '1', '', 'x', '-1'])}`);
    if (rng.chance(0.2)) q.push(`resourceVersionMatch=${rng.pick(['Exact', 'NotOlderThan', 'bogus'])}`);
  }
  if (rng.chance(0.05)) q.push(`${enc(randomString(rng))}=${enc(randomString(rng))}`);
  return q.length ? `?${q.join('&')}` : '';
}

function mutatePath(rng: Rng, path: string): string {
  switch (rng.int(10)) {
    case 0:
      return `${path}/${enc(randomString(rng))}`;
    case 1:
      return `${path}/status`;
    case 2:
      return path.replace('/v1', rng.pick(['/v2', '/v1beta1', '']));
    case 3:
      return `${path}%zz`;
    case 4:
      return `${path}//x`;
    case 5:
      return path.replace(FUZZ_NAMESPACE, enc(randomString(rng)) || 'x');
    case 6:
      return `${path}/${'y'.repeat(rng.pick([300, 3000, 6000]))}`;
    case 7:
      return `${path}/..%2F..%2Fapi`;
    default:
      return path;
  }
}

function headers(rng: Rng, contentType: string | undefined): Record<string, string> {
  const h: Record<string, string> = {};
  if (contentType) h['content-type'] = rng.chance(0.92) ? contentType : rng.pick([`${contentType}; charset=utf-8`, contentType.toUpperCase(), 'text/plain', '', 'application/x-unknown', `${contentType}, application/json`]);
  if (rng.chance(0.25)) h.accept = rng.pick(['application/yaml', 'application/json;as=Table;v=v1;g=meta.k8s.io', 'application/vnd.svc.protobuf', '*/*', 'text/html', 'application/json;q=0', 'x']);
  return h;
}

function encodeBody(rng: Rng, t: BodyType, k: Kind, doc: unknown, light: boolean): Buffer {
  switch (t) {
    case 'yaml':
    case 'apply-yaml':
      return Buffer.from(toYamlText(rng, doc, light));
    case 'protobuf':
      try {
        return Buffer.from(encodeProtobufObject(k.apiVersion, k.kind, doc as Record<string, unknown>));
      } catch {
        // a value protobuf cannot carry: send the JSON, which is not protobuf at all
        return Buffer.from(toJsonText(rng, doc));
      }
    default:
      return Buffer.from(toJsonText(rng, doc));
  }
}

function patchDocument(rng: Rng, t: BodyType, k: Kind, name: string): unknown {
  switch (t) {
    case 'json-patch':
      return Array.from({ length: 1 + rng.int(3) }, () =>
        rng.pick([
          { op: 'add', path: '/metadata/labels', value: { x: 'y' } },
          { op: 'replace', path: '/metadata/annotations', value: { a: 'b' } },
          { op: 'test', path: '/metadata/name', value: name },
          { op: 'remove', path: '/metadata/labels' },
          { op: 'move', from: '/metadata/annotations', path: '/metadata/labels' },
          { op: 'copy', from: '/metadata', path: '/metadata/annotations' },
          { op: 'add', path: k.kind === 'ConfigMap' ? '/data/z' : '/metadata/labels/z', value: 'z' },
          { op: 'add', path: '/metadata/finalizers/-', value: 'example.com/f' },
        ]),
      );
    case 'merge-patch':
    case 'strategic-merge-patch':
      return rng.pick([
        { metadata: { labels: { x: 'y' } } },
        { metadata: { finalizers: ['example.com/g'], '$setElementOrder/finalizers': ['example.com/g'] } },
        { metadata: { '$deleteFromPrimitiveList/finalizers': ['example.com/f'] } },
        { metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'o', uid: 'u1' }] } },
        k.kind === 'ConfigMap' ? { data: { a: null, z: '1' } } : { metadata: { annotations: { a: null } } },
        { metadata: { labels: { $patch: 'replace', y: 'z' } } },
      ]);
    default:
      return k.object(rng, name);
  }
}

export interface Generation {
  /** Target generation (a new one after `regenerateEvery` cases). */
  g: number;
  /** Leave out the costliest bodies (megabytes, YAML of many tokens): for the slice in the test suite. */
  light: boolean;
}

/** The `n`th case of a seed: depends on the seed stream only. */
export function nextCase(rng: Rng, gen: Generation): FuzzCase {
  const k = rng.pick(kinds);
  const target = targetName(k, gen.g, rng.int(TARGETS));
  if (rng.chance(0.15)) {
    // a read with mutated path, query and headers
    const p = rng.chance(0.5) ? k.collection : `${k.collection}/${target}`;
    return { bodyType: 'none', method: rng.pick(['GET', 'GET', 'GET', 'HEAD', 'OPTIONS']), path: mutatePath(rng, p) + query(rng, false, false), headers: headers(rng, undefined), write: false, dryRun: false };
  }
  const bodyType = rng.pick(bodyTypes);
  const isPatch = !['json', 'yaml', 'protobuf'].includes(bodyType);
  const method = isPatch ? 'PATCH' : rng.chance(0.5) ? 'POST' : 'PUT';
  const name = method === 'POST' ? `fz-${rng.u32().toString(36)}` : target;
  let doc = isPatch ? patchDocument(rng, bodyType, k, name) : k.object(rng, name);
  for (let i = rng.int(4); i > 0; i--) doc = mutateValue(rng, doc, gen.light);
  let body = encodeBody(rng, bodyType, k, doc, gen.light);
  if (rng.chance(bodyType === 'protobuf' ? 0.6 : 0.3)) for (let i = 1 + rng.int(3); i > 0; i--) body = mutateBytes(rng, body);
  let path = method === 'POST' ? k.collection : `${k.collection}/${name}`;
  if (rng.chance(0.08)) path = mutatePath(rng, path);
  const q = query(rng, true, bodyType === 'apply-yaml');
  return {
    bodyType,
    method,
    path: path + q,
    headers: headers(rng, contentTypes[bodyType as Exclude<BodyType, 'none'>]),
    body,
    write: true,
    dryRun: /[?&]dryRun=All(&|$)/.test(q),
  };
}

// ---------------------------------------------------------------------------------------------
// Running

export interface Answer {
  status: number;
  text: string;
  /** Set when the request got no HTTP answer (reset, closed). */
  error?: string;
}

export class FuzzClient {
  private agent: Agent;
  constructor(private readonly srv: { url: string; ca: string }) {
    this.agent = new Agent({ keepAlive: true, ca: srv.ca, maxSockets: 1 });
  }

  send(method: string, path: string, headers: Record<string, string> = {}, body?: Buffer): Promise<Answer> {
    return new Promise((resolve) => {
      let settled = false;
      const settle = (a: Answer): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (a.error) {
          // a connection the server closed under us: the next request gets a fresh one
          this.agent.destroy();
          this.agent = new Agent({ keepAlive: true, ca: this.srv.ca, maxSockets: 1 });
        }
        resolve(a);
      };
      const h: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}`, ...headers };
      if (body) h['content-length'] = String(body.length);
      const req = httpsRequest(new URL(path, this.srv.url), { method, headers: h, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => settle({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (e) => settle({ status: 0, text: '', error: e.message }));
        res.on('close', () => settle({ status: 0, text: '', error: 'response closed before its end' }));
      });
      // longer than any request may take (--request-timeout is 1m), so a hang is reported, not waited on for ever
      const timer = setTimeout(() => {
        settle({ status: 0, text: '', error: 'no answer within 120 s' });
        req.destroy();
      }, 120_000);
      req.on('error', (e) => settle({ status: 0, text: '', error: `${(e as NodeJS.ErrnoException).code ?? ''} ${e.message}` }));
      req.on('close', () => settle({ status: 0, text: '', error: 'connection closed without an answer' }));
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }

  /**
   * The store's revision right after one write of its own: a merge patch to the sentinel object, whose
   * answer carries the revision the store gave it. Reads cannot serve here: a write that was
   * committed but answered as failed is not acknowledged, so a consistent read need not see it yet.
   */
  async sentinelWrite(n: number): Promise<number> {
    const path = `/api/v1/namespaces/${FUZZ_NAMESPACE}/configmaps/${SENTINEL}`;
    const body = Buffer.from(`{"data":{"n":"${n}"}}`);
    let r = await this.send('PATCH', path, { 'content-type': 'application/merge-patch+json' }, body);
    // a connection the previous case left broken: one more try on a fresh one
    for (let i = 0; i < 3 && r.error; i++) r = await this.send('PATCH', path, { 'content-type': 'application/merge-patch+json' }, body);
    if (r.status !== 200) throw new Error(`sentinel write failed: ${r.status} ${r.error ?? r.text.slice(0, 200)}`);
    return Number(JSON.parse(r.text).metadata.resourceVersion);
  }
}

const SENTINEL = 'fuzz-sentinel';

export interface Failure {
  seed: number;
  index: number;
  problem: string;
  method: string;
  path: string;
  bodyType: BodyType;
  status: number;
  answer: string;
  /** The start of the body, to reproduce by hand (the seed and index reproduce it exactly). */
  body: string;
}

export interface FuzzReport {
  cases: number;
  byBodyType: Record<string, number>;
  byStatus: Record<string, number>;
  fiveXX: number;
  changedOnReject: number;
  noAnswer: number;
  notStatus: number;
  /** Reads ahead of the store's revision: upstream answers them with a 504 Timeout, so do we (not counted as 5xx). */
  futureReads: number;
  peakRssMiB: number;
  failures: Failure[];
  alive: boolean;
}

export interface FuzzOptions {
  seed: number;
  /** Stop after this many cases... */
  cases?: number;
  /** ...or this many milliseconds, whichever comes first. */
  durationMs?: number;
  /** RSS the server must stay under. */
  rssLimitMiB: number;
  /** A fresh set of target objects every this many cases. */
  regenerateEvery?: number;
  /** Called every 500 cases. */
  progress?(r: FuzzReport): void;
  /** See Generation.light. */
  light?: boolean;
}

async function makeTargets(c: FuzzClient, g: number, rng: Rng): Promise<void> {
  for (const k of kinds) {
    for (let i = 0; i < TARGETS; i++) {
      const r = await c.send('POST', k.collection, { 'content-type': 'application/json' }, Buffer.from(JSON.stringify(k.object(rng, targetName(k, g, i)))));
      if (r.status !== 201 && r.status !== 409) throw new Error(`creating a fuzz target failed: ${r.status} ${r.text.slice(0, 200)}`);
    }
  }
}

const isStatus = (text: string): boolean => {
  try {
    const j = JSON.parse(text) as { kind?: string };
    return j.kind === 'Status';
  } catch {
    return false;
  }
};

/** The resourceVersion of an object in a JSON answer, if it is one. */
function resourceVersionOf(text: string): number | undefined {
  try {
    const rv = Number((JSON.parse(text) as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion);
    return Number.isInteger(rv) && rv > 0 ? rv : undefined;
  } catch {
    return undefined;
  }
}

/** Runs cases against a spawned server and checks each; the server is the caller's to stop. */
export async function runFuzz(srv: SpawnedServer, o: FuzzOptions): Promise<FuzzReport> {
  const pid = srv.proc.pid!;
  const c = new FuzzClient(srv);
  const rng = new Rng(o.seed);
  const setup = new Rng(o.seed ^ 0x5eed);
  const report: FuzzReport = { cases: 0, byBodyType: {}, byStatus: {}, fiveXX: 0, changedOnReject: 0, noAnswer: 0, notStatus: 0, futureReads: 0, peakRssMiB: 0, failures: [], alive: true };
  const fail = (index: number, problem: string, fc: FuzzCase, a: Answer): void => {
    if (report.failures.length < 200) {
      report.failures.push({ seed: o.seed, index, problem, method: fc.method, path: fc.path.slice(0, 300), bodyType: fc.bodyType, status: a.status, answer: (a.error ?? a.text).slice(0, 400), body: (fc.body ?? Buffer.alloc(0)).subarray(0, 300).toString('utf8') });
    }
  };
  const ns = await c.send('POST', '/api/v1/namespaces', { 'content-type': 'application/json' }, Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: FUZZ_NAMESPACE } })));
  if (ns.status !== 201 && ns.status !== 409) throw new Error(`creating the fuzz namespace failed: ${ns.status} ${ns.text}`);
  const gen: Generation = { g: 0, light: o.light === true };
  await makeTargets(c, gen.g, setup);
  const sentinel = await c.send('POST', `/api/v1/namespaces/${FUZZ_NAMESPACE}/configmaps`, { 'content-type': 'application/json' }, Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: SENTINEL } })));
  if (sentinel.status !== 201 && sentinel.status !== 409) throw new Error(`creating the sentinel failed: ${sentinel.status} ${sentinel.text}`);
  let writes = 0;
  let revision = await c.sentinelWrite(++writes);
  const started = Date.now();
  const regen = o.regenerateEvery ?? 1000;
  try {
    for (let i = 0; (o.cases === undefined || i < o.cases) && (o.durationMs === undefined || Date.now() - started < o.durationMs); i++) {
      if (i > 0 && i % regen === 0) {
        gen.g++;
        await makeTargets(c, gen.g, setup);
        revision = await c.sentinelWrite(++writes);
      }
      const fc = nextCase(rng, gen);
      const a = await c.send(fc.method, fc.path, fc.headers, fc.body);
      report.cases++;
      report.byBodyType[fc.bodyType] = (report.byBodyType[fc.bodyType] ?? 0) + 1;
      const statusKey = a.error ? 'no answer' : String(a.status);
      report.byStatus[statusKey] = (report.byStatus[statusKey] ?? 0) + 1;
      if (a.error) {
        report.noAnswer++;
        fail(i, 'no HTTP answer', fc, a);
      } else if (a.status === 504 && !fc.write && /resourceVersion=999999999/.test(fc.path)) {
        // upstream's answer to a read ahead of the store (a Timeout Status with retryAfterSeconds)
        report.futureReads++;
      } else if (a.status >= 500) {
        report.fiveXX++;
        fail(i, '5xx for client input', fc, a);
      } else if (a.status >= 400 && fc.method !== 'HEAD' && !isStatus(a.text) && !/yaml|protobuf/.test(fc.headers.accept ?? '')) {
        report.notStatus++;
        fail(i, 'an error without a Status body', fc, a);
      }
      const accepted = !a.error && a.status >= 200 && a.status < 300;
      const committedAt = accepted && !fc.dryRun ? resourceVersionOf(a.text) : undefined;
      if (fc.write && committedAt !== undefined) {
        // an accepted write names the revision it committed (or an older one, when it changed nothing)
        revision = Math.max(revision, committedAt);
      } else if (fc.write) {
        let after: number;
        try {
          after = await c.sentinelWrite(++writes);
        } catch (e) {
          // a server that cannot take a small write any more has died (or is dying)
          await new Promise((r) => setTimeout(r, 500));
          report.alive = false;
          fail(i, `server stopped answering after this case (${(e as Error).message}; exit ${srv.proc.exitCode ?? srv.proc.signalCode ?? 'pending'})`, fc, a);
          break;
        }
        // the sentinel's own write is the one revision a rejected case may be followed by
        if (after !== revision + 1 && (!accepted || fc.dryRun)) {
          report.changedOnReject++;
          fail(i, `store changed (revision ${revision} -> ${after - 1}) by a ${accepted ? 'dry run' : 'rejected write'}`, fc, a);
        }
        revision = after;
      }
      if (srv.proc.exitCode !== null || srv.proc.signalCode !== null) {
        report.alive = false;
        fail(i, `server exited (${srv.proc.exitCode ?? srv.proc.signalCode})`, fc, a);
        break;
      }
      if (i % 50 === 0) {
        const rss = rssMiB(pid);
        report.peakRssMiB = Math.max(report.peakRssMiB, rss);
        if (rss > o.rssLimitMiB) {
          fail(i, `RSS ${rss} MiB over the ${o.rssLimitMiB} MiB bound`, fc, a);
          break;
        }
      }
      if (o.progress && report.cases % 500 === 0) o.progress(report);
    }
    if (report.alive) {
      const live = await c.send('GET', '/livez');
      report.alive = live.status === 200;
      report.peakRssMiB = Math.max(report.peakRssMiB, peakRssMiB(pid));
    }
  } finally {
    c.close();
  }
  return report;
}

/**
 * Flags of a fuzzed server: the controllers that write on their own (a default ServiceAccount in each
 * new namespace, the garbage collector removing objects whose owners are gone) are off, since every
 * case checks that the store's revision moved only by its own write.
 */
export const FUZZ_SERVER_FLAGS: readonly string[] = ['--controllers=*,-serviceaccount,-garbagecollector'];

/** A report as printable lines. */
export function formatReport(title: string, r: FuzzReport): string {
  const lines = [
    `${title}: ${r.cases} cases, 5xx ${r.fiveXX}, rejected writes that changed something ${r.changedOnReject}, no answer ${r.noAnswer}, errors without a Status ${r.notStatus}, future-revision reads (504 as upstream) ${r.futureReads}, peak RSS ${r.peakRssMiB} MiB, alive ${r.alive}`,
    `  cases per body type: ${Object.entries(r.byBodyType)
      .sort()
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    `  answers: ${Object.entries(r.byStatus)
      .sort()
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ')}`,
  ];
  for (const f of r.failures.slice(0, 20)) lines.push(`  FAIL seed ${f.seed} case ${f.index}: ${f.problem}: ${f.method} ${f.path} [${f.bodyType}] -> ${f.status} ${f.answer.slice(0, 200)}`);
  return lines.join('\n');
}
