/**
 * YAML request and response bodies. Upstream converts YAML 1.1 (go-yaml v2) to JSON, so `yes`/`on`
 * are booleans and `0777` is octal; timestamps stay strings (they are decoded into plain values, not
 * time types). Output is JSON turned into YAML with sorted keys and unindented sequences, the way
 * upstream's YAML printer writes it.
 */
import { LineCounter, parseAllDocuments, stringify, isMap, isSeq, isScalar, type Node } from 'yaml';
import { JsonSyntaxError } from './json.js';

export interface DecodedYaml {
  value: unknown;
  /** Duplicate keys, worded as upstream's YAML strict decoder: `line 5: key "x" already set in map`. */
  duplicates: string[];
}

const withoutTimestamps = (tags: unknown[]): unknown[] =>
  tags.filter((t) => (t as { tag?: string }).tag !== 'tag:yaml.org,2002:timestamp');

export function decodeYaml(text: string): DecodedYaml {
  try {
    return decodeYamlDocument(text);
  } catch (e) {
    // the parser nests by recursion: a document too deep for the stack is refused as too deep
    if (e instanceof RangeError) throw new JsonSyntaxError('error converting YAML to JSON: yaml: exceeded max depth');
    throw e;
  }
}

function decodeYamlDocument(text: string): DecodedYaml {
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(text, {
    version: '1.1',
    uniqueKeys: false,
    lineCounter,
    customTags: withoutTimestamps as never,
  });
  if (!Array.isArray(docs)) throw new JsonSyntaxError('error converting YAML to JSON: invalid document');
  const nonEmpty = docs.filter((d) => d.contents !== null);
  for (const d of docs) {
    if (d.errors.length) {
      const e = d.errors[0]!;
      const line = e.linePos?.[0]?.line;
      const what = /Maximum call stack size exceeded/.test(e.message) ? 'exceeded max depth' : e.message.split('\n')[0];
      throw new JsonSyntaxError(`error converting YAML to JSON: yaml: ${line ? `line ${line}: ` : ''}${what}`);
    }
  }
  if (nonEmpty.length > 1) throw new JsonSyntaxError('error converting YAML to JSON: yaml: the body holds more than one document');
  const doc = nonEmpty[0];
  if (!doc) return { value: null, duplicates: [] };
  const duplicates: string[] = [];
  collectDuplicates(doc.contents as Node, lineCounter, duplicates);
  return { value: doc.toJS({ maxAliasCount: 100 }), duplicates };
}

function collectDuplicates(node: Node | null, lc: LineCounter, out: string[]): void {
  if (!node) return;
  if (isMap(node)) {
    const seen = new Set<string>();
    for (const pair of node.items) {
      const k = pair.key as Node | null;
      const key = isScalar(k) ? String(k.value) : '';
      if (seen.has(key)) {
        const line = k?.range ? lc.linePos(k.range[0]).line : 0;
        out.push(`line ${line}: key ${JSON.stringify(key)} already set in map`);
      } else seen.add(key);
      collectDuplicates(pair.value as Node | null, lc, out);
    }
  } else if (isSeq(node)) {
    for (const item of node.items) collectDuplicates(item as Node | null, lc, out);
  }
}

/**
 * Writes a JSON value as YAML: keys sorted, sequences not indented under their key, and an object that
 * occurs twice in the value written twice (never as an anchor and alias, which JSON cannot express).
 */
export function encodeYaml(value: unknown): string {
  return stringify(value, { sortMapEntries: true, indentSeq: false, lineWidth: 0, version: '1.1', aliasDuplicateObjects: false });
}
