/**
 * A composed YAML document as plain JSON-like values, the way upstream turns YAML into JSON (go-yaml
 * v2 into interface{} values, then sigs.k8s.io/yaml to JSON): aliases expanded under go-yaml's limits
 * (an anchor may not contain its own alias; an unknown anchor is an error; beyond 100 alias-driven
 * decodes in a document of more than 1000, the share of decodes that come from aliases is capped at
 * 99%, falling to 10% between 400,000 and 4,000,000 decodes), merge keys (`<<`) applied in document
 * order with earlier sequence entries taking precedence, scalar keys written as strings, and the
 * result no deeper than JSON's nesting limit. Everything walks with explicit stacks, so neither alias
 * chains nor nesting can exhaust the thread's stack, and the work is linear in the decodes made.
 */
import type { Alias, LineCounter, Node, Pair, Scalar, YAMLMap, YAMLSeq } from 'yaml';
import { yamlLibrary } from './yaml-library.js';
import { goQuote } from '../api/validation.js';
import { JsonSyntaxError } from './json.js';
import { MAX_JSON_DEPTH } from './limits.js';

// the library's node tests, through its lazy loader (a document was parsed, so it is loaded by now)
const isAlias = (n: unknown): n is Alias => yamlLibrary().isAlias(n);
const isMap = (n: unknown): n is YAMLMap => yamlLibrary().isMap(n);
const isPair = (n: unknown): n is Pair => yamlLibrary().isPair(n);
const isScalar = (n: unknown): n is Scalar => yamlLibrary().isScalar(n);
const isSeq = (n: unknown): n is YAMLSeq => yamlLibrary().isSeq(n);

/** A YAML error, worded as sigs.k8s.io/yaml reports go-yaml's. */
export const yamlError = (message: string): JsonSyntaxError => new JsonSyntaxError(`error converting YAML to JSON: yaml: ${message}`);

type Item = Node | Pair | null;
type Value = unknown;

const ALIAS_RATIO_LOW = 400_000;
const ALIAS_RATIO_HIGH = 4_000_000;

/** The share of decodes aliases may account for, at `decodes` decodes (go-yaml's allowedAliasRatio). */
export function allowedAliasRatio(decodes: number): number {
  if (decodes <= ALIAS_RATIO_LOW) return 0.99;
  if (decodes >= ALIAS_RATIO_HIGH) return 0.1;
  return 0.99 - 0.89 * ((decodes - ALIAS_RATIO_LOW) / (ALIAS_RATIO_HIGH - ALIAS_RATIO_LOW));
}

const isMergeKey = (k: unknown): boolean =>
  isScalar(k) &&
  (!k.type || k.type === 'PLAIN') &&
  (k.value === '<<' || (typeof k.value === 'symbol' && k.value.description === '<<'));

/** Pushes the children of a node, so that they pop in document order (keys before values). */
function pushChildren(stack: Item[], n: Item): void {
  if (isPair(n)) {
    stack.push(n.value as Item, n.key as Item);
  } else if (isMap(n) || isSeq(n)) {
    const items = (n as YAMLMap | YAMLSeq).items as Item[];
    for (let i = items.length - 1; i >= 0; i--) stack.push(items[i]!);
  }
}

/**
 * Resolves every alias to the node of the last anchor of that name before it in the document (an
 * anchor is in force from the start of its node, so an alias inside it names the node itself).
 */
export function resolveAliases(root: Item): Map<Alias, Node> {
  const anchors = new Map<string, Node>();
  const targets = new Map<Alias, Node>();
  const stack: Item[] = [root];
  while (stack.length) {
    const n = stack.pop()!;
    if (!n) continue;
    if (isAlias(n)) {
      const t = anchors.get(n.source);
      if (!t) throw yamlError(`unknown anchor '${n.source}' referenced`);
      targets.set(n, t);
      continue;
    }
    const anchor = (n as { anchor?: string }).anchor;
    if (anchor) anchors.set(anchor, n as Node);
    pushChildren(stack, n);
  }
  return targets;
}

/** upstream's strict YAML decoder's words for a key met twice in one map. */
export const yamlDuplicateKey = (key: string, line: number): string => `line ${line}: key ${goQuote(key)} already set in map`;

/** Duplicate keys per map, worded as upstream's strict YAML decoder: `line 5: key "x" already set in map`. */
export function duplicateKeys(root: Item, lc: LineCounter): string[] {
  const out: string[] = [];
  // a pair is visited with the keys its map has shown so far: reports come in document order
  const stack: { n: Item; seen?: Set<string> }[] = [{ n: root }];
  while (stack.length) {
    const { n, seen } = stack.pop()!;
    if (!n || isAlias(n)) continue;
    if (isPair(n) && seen) {
      const k = n.key as Node | null;
      const key = isScalar(k) ? String(k.value) : '';
      if (seen.has(key)) out.push(yamlDuplicateKey(key, k?.range ? lc.linePos(k.range[0]).line : 0));
      else seen.add(key);
      stack.push({ n: n.value as Item });
    } else if (isMap(n)) {
      const keys = new Set<string>();
      for (let i = n.items.length - 1; i >= 0; i--) stack.push({ n: n.items[i] as Item, seen: keys });
    } else if (isSeq(n)) {
      for (let i = n.items.length - 1; i >= 0; i--) stack.push({ n: n.items[i] as Item });
    }
  }
  return out;
}

/** Decode counting with go-yaml's alias limits. */
class DecodeBudget {
  decodes = 0;
  aliasDecodes = 0;
  aliasDepth = 0;

  count(): void {
    this.decodes++;
    if (this.aliasDepth > 0) this.aliasDecodes++;
    if (this.aliasDecodes > 100 && this.decodes > 1000 && this.aliasDecodes / this.decodes > allowedAliasRatio(this.decodes)) {
      throw yamlError('document contains excessive aliasing');
    }
  }
}

function scalarValue(v: unknown): Value {
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'symbol') return v.description ?? '';
  return v ?? null;
}

function setKey(o: Record<string, Value>, k: string, v: Value): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  else o[k] = v;
}

/** The node an item stands for, its alias followed (an alias names a node, never another alias). */
const target = (n: Item, targets: Map<Alias, Node>): Item => (isAlias(n) ? (targets.get(n) ?? null) : n);

const wantMap = (): JsonSyntaxError => yamlError('map merge requires map or sequence of maps as the value');

/** One collection being built; `next` hands out its children, `accept` takes their values. */
interface Frame {
  next(): Item | undefined;
  accept(v: Value): void;
  value(): Value;
  /** Set for the frame that ends an alias expansion. */
  alias?: Alias;
}

function seqFrame(n: YAMLSeq): Frame {
  const out: Value[] = [];
  let i = 0;
  return { next: () => (i < n.items.length ? (n.items[i++] as Item) : undefined), accept: (v) => void out.push(v), value: () => out };
}

/**
 * A map's pairs, in order: each key then its value; a merge key's value is merged into the map
 * (overriding what is there, as go-yaml does), entries of a merged sequence from last to first.
 */
function mapFrame(pairs: readonly Pair[], targets: Map<Alias, Node>): Frame {
  const out: Record<string, Value> = {};
  let i = 0;
  let want: 'key' | 'value' | 'merge' = 'key';
  let key = '';
  const merge = (src: Value): void => {
    for (const k of Object.keys(src as object)) setKey(out, k, (src as Record<string, Value>)[k]);
  };
  return {
    next() {
      if (i >= pairs.length) return undefined;
      const p = pairs[i]!;
      if (want === 'key' && isMergeKey(p.key)) {
        const src = target(p.value as Item, targets);
        if (!isMap(src) && !(isSeq(src) && src.items.every((it) => isMap(target(it as Item, targets))))) throw wantMap();
        want = 'merge';
      }
      return (want === 'key' ? p.key : p.value) as Item;
    },
    accept(v) {
      const p = pairs[i]!;
      if (want === 'key') {
        const k = target(p.key as Item, targets);
        if (k && !isScalar(k)) throw yamlError(`unsupported map key of type: ${isSeq(k) ? '[]interface {}' : 'map[interface {}]interface {}'}`);
        key = v === null || v === undefined ? '' : String(v);
        want = 'value';
        return;
      }
      if (want === 'merge') {
        if (Array.isArray(v)) for (let j = v.length - 1; j >= 0; j--) merge(v[j]);
        else merge(v);
      } else setKey(out, key, v);
      want = 'key';
      i++;
    },
    value: () => out,
  };
}

/**
 * The document's value: a walk with an explicit stack of open collections. Every node decoded counts
 * against the alias budget, an alias's target is decoded afresh each time (as go-yaml does), and
 * an alias met again while its own expansion is open is go-yaml's self-containing anchor.
 */
export function documentValue(root: Item, targets: Map<Alias, Node>): Value {
  const budget = new DecodeBudget();
  budget.count(); // the document node
  const stack: Frame[] = [];
  const open = new Set<Alias>();
  let depth = 0;
  let result: Value = null;
  const deliver = (v: Value): void => {
    if (stack.length) stack[stack.length - 1]!.accept(v);
    else result = v;
  };
  let pending: Item | undefined = root;
  for (;;) {
    if (pending !== undefined) {
      const n: Item = pending;
      pending = undefined;
      budget.count();
      if (n === null) deliver(null);
      else if (isAlias(n)) {
        if (open.has(n)) throw yamlError(`anchor '${n.source}' value contains itself`);
        open.add(n);
        budget.aliasDepth++;
        let expanded: Value = null;
        stack.push({ alias: n, next: () => undefined, accept: (v) => void (expanded = v), value: () => expanded });
        pending = targets.get(n)!;
      } else if (isScalar(n)) deliver(scalarValue(n.value));
      else if (isPair(n)) {
        // a pair inside a sequence (`[a: 1]`, !!omap) is a map of one entry
        stack.push(mapFrame([n], targets));
        depth++;
      } else if (isMap(n)) {
        stack.push(mapFrame(n.items as Pair[], targets));
        depth++;
      } else if (isSeq(n)) {
        stack.push(seqFrame(n));
        depth++;
      } else deliver(null);
      if (depth > MAX_JSON_DEPTH) throw new JsonSyntaxError(`invalid character '${isSeq(n) ? '[' : '{'}' exceeded max depth`);
      continue;
    }
    const top = stack[stack.length - 1];
    if (!top) return result;
    const child = top.next();
    if (child !== undefined) {
      pending = child;
      continue;
    }
    stack.pop();
    if (top.alias) {
      open.delete(top.alias);
      budget.aliasDepth--;
      deliver(top.value());
    } else {
      depth--;
      deliver(top.value());
    }
  }
}
