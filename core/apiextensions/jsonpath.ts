/**
 * The JSONPath of printer columns, selectable fields and scale paths, as upstream's template-style
 * JSONPath reads them (without the surrounding braces): `.a.b`, `['key']`, `[0]`, `[*]`, `..`-free,
 * and filters `[?(@.type=="Ready")]`. A path is parsed once and evaluated to the list of values it
 * finds.
 */

type Step =
  | { t: 'field'; name: string }
  | { t: 'index'; i: number }
  | { t: 'all' }
  | { t: 'filter'; path: Step[]; op: '==' | '!=' | 'exists'; value?: unknown };

export class JsonPathError extends Error {}

const FIELD = /^[A-Za-z0-9_$-]+/;

function parseSteps(src: string, at: { i: number }, stopAt?: string): Step[] {
  const steps: Step[] = [];
  while (at.i < src.length) {
    const c = src[at.i];
    if (stopAt && src.startsWith(stopAt, at.i)) break;
    if (c === '.') {
      at.i++;
      if (src[at.i] === '.') throw new JsonPathError('recursive descent is not supported');
      const m = FIELD.exec(src.slice(at.i));
      if (!m) {
        if (at.i >= src.length) break; // a lone `.` is the object itself
        throw new JsonPathError(`unexpected character ${JSON.stringify(src[at.i])} at ${at.i}`);
      }
      steps.push({ t: 'field', name: m[0] });
      at.i += m[0].length;
    } else if (c === '[') {
      const rest = src.slice(at.i);
      let m: RegExpExecArray | null;
      if ((m = /^\[\s*'((?:[^'\\]|\\.)*)'\s*\]/.exec(rest)) || (m = /^\[\s*"((?:[^"\\]|\\.)*)"\s*\]/.exec(rest))) {
        steps.push({ t: 'field', name: m[1]!.replace(/\\(.)/g, '$1') });
        at.i += m[0].length;
      } else if ((m = /^\[\s*(-?\d+)\s*\]/.exec(rest))) {
        steps.push({ t: 'index', i: Number(m[1]) });
        at.i += m[0].length;
      } else if ((m = /^\[\s*\*\s*\]/.exec(rest))) {
        steps.push({ t: 'all' });
        at.i += m[0].length;
      } else if (rest.startsWith('[?(')) {
        at.i += 3;
        if (src[at.i] !== '@') throw new JsonPathError('filter must start with @');
        at.i++;
        const path = parseSteps(src, at, ')');
        const body = src.slice(at.i, src.indexOf(')', at.i));
        at.i += body.length;
        if (!src.startsWith(')]', at.i)) throw new JsonPathError('unterminated filter');
        at.i += 2;
        steps.push(filterStep(path, body));
      } else throw new JsonPathError(`unrecognized subscript at ${at.i}`);
    } else throw new JsonPathError(`unexpected character ${JSON.stringify(c)} at ${at.i}`);
  }
  return steps;
}

/** The comparison after a filter's path: `==` / `!=` a literal, or nothing (the field exists). */
function filterStep(path: Step[], rest: string): Step {
  const r = rest.trim();
  if (r === '') return { t: 'filter', path, op: 'exists' };
  const m = /^(==|!=)\s*(.+)$/.exec(r);
  if (!m) throw new JsonPathError(`unsupported filter ${JSON.stringify(r)}`);
  let lit = m[2]!.trim();
  if ((lit.startsWith("'") && lit.endsWith("'")) || (lit.startsWith('"') && lit.endsWith('"'))) lit = JSON.stringify(lit.slice(1, -1));
  let value: unknown;
  try {
    value = JSON.parse(lit);
  } catch {
    throw new JsonPathError(`unsupported filter value ${JSON.stringify(m[2])}`);
  }
  return { t: 'filter', path, op: m[1] as '==' | '!=', value };
}

export interface JsonPath {
  source: string;
  steps: Step[];
}

const cache = new Map<string, JsonPath>();

/** Parses a path such as `.status.replicas` (JsonPathError when it is not one). */
export function parseJsonPath(source: string): JsonPath {
  let p = cache.get(source);
  if (!p) {
    const src = source.trim().replace(/^\{(.*)\}$/s, '$1');
    if (src !== '' && src[0] !== '.' && src[0] !== '[') throw new JsonPathError(`must start with . or [`);
    p = { source, steps: parseSteps(src, { i: 0 }) };
    if (cache.size > 10_000) cache.clear();
    cache.set(source, p);
  }
  return p;
}

function step(values: unknown[], s: Step): unknown[] {
  const out: unknown[] = [];
  for (const v of values) {
    if (v === null || typeof v !== 'object') continue;
    switch (s.t) {
      case 'field':
        if (!Array.isArray(v) && (v as Record<string, unknown>)[s.name] !== undefined) out.push((v as Record<string, unknown>)[s.name]);
        break;
      case 'index':
        if (Array.isArray(v)) {
          const i = s.i < 0 ? v.length + s.i : s.i;
          if (i >= 0 && i < v.length) out.push(v[i]);
        }
        break;
      case 'all':
        out.push(...(Array.isArray(v) ? v : Object.values(v)));
        break;
      case 'filter':
        for (const item of Array.isArray(v) ? v : [v]) {
          const found = evaluate(s.path, item);
          if (s.op === 'exists' ? found.length > 0 : found.some((f) => (JSON.stringify(f) === JSON.stringify(s.value)) === (s.op === '=='))) out.push(item);
        }
        break;
    }
  }
  return out;
}

function evaluate(steps: Step[], root: unknown): unknown[] {
  let values = [root];
  for (const s of steps) values = step(values, s);
  return values;
}

/** Every value the path finds in `obj`. */
export function findAll(path: JsonPath, obj: unknown): unknown[] {
  return evaluate(path.steps, obj);
}

/** The dotted field path of a simple path (`.spec.replicas` -> `spec.replicas`), or undefined if it is not simple. */
export function simpleFieldPath(path: JsonPath): string | undefined {
  if (!path.steps.every((s) => s.t === 'field')) return undefined;
  return path.steps.map((s) => (s as { name: string }).name).join('.');
}
