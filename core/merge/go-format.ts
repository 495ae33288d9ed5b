/**
 * Renders JSON values the way Go's fmt and encoding/json print the decoded (`interface{}`) forms,
 * so error messages and FieldsV1 keys read exactly as upstream writes them: %v, %#v, %T and
 * encoding/json string escaping (HTML-safe); %q is api/validation's goQuote. Integral numbers are
 * Go int64, others float64.
 */
import { compareUtf8, goFloat } from '../api/go-format.js';
import { goQuote } from '../api/validation.js';
import { type JsonValue, jsonKind } from './json-values.js';

const sortedKeys = (o: Record<string, unknown>): string[] => Object.keys(o).filter((k) => o[k] !== undefined).sort(compareUtf8);

const isInt64 = (n: number): boolean => Number.isInteger(n) && Math.abs(n) < 2 ** 63;

export const goNumber = (n: number): string => (isInt64(n) ? String(n) : goFloat(n));

/** %T of a decoded JSON value. */
export function goType(v: JsonValue | undefined): string {
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return '[]interface {}';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    case 'number':
      return isInt64(v) ? 'int64' : 'float64';
    default:
      return 'map[string]interface {}';
  }
}

/** The JSON kind Go's decoder names in `cannot unmarshal <kind> into ...` errors. */
export const goJsonKind = (v: JsonValue): string => {
  const k = jsonKind(v);
  return k === 'boolean' ? 'bool' : k;
};

/** How one of Go's printers writes containers and scalars. */
interface Printer {
  nil: string;
  scalar(v: string | number | boolean): string;
  list: [open: string, sep: string, close: string];
  map: [open: string, sep: string, close: string];
  /** A map entry's key and the separator before its value. */
  key(k: string): string;
}

/**
 * Prints a value with an explicit stack (values from request bodies may nest thousands of levels):
 * map keys in Go's sorted order.
 */
function print(v: JsonValue | undefined, p: Printer): string {
  const out: string[] = [];
  const open: { entries: [string, JsonValue | undefined][]; i: number; sep: string; close: string }[] = [];
  let next: JsonValue | undefined = v;
  let pending = true;
  for (;;) {
    if (pending) {
      pending = false;
      const x = next;
      if (x === null || x === undefined) out.push(p.nil);
      else if (Array.isArray(x)) {
        out.push(p.list[0]);
        open.push({ entries: x.map((y) => ['', y]), i: 0, sep: p.list[1], close: p.list[2] });
      } else if (typeof x === 'object') {
        out.push(p.map[0]);
        open.push({ entries: sortedKeys(x).map((k) => [p.key(k), x[k]]), i: 0, sep: p.map[1], close: p.map[2] });
      } else out.push(p.scalar(x));
      continue;
    }
    const top = open[open.length - 1];
    if (!top) return out.join('');
    if (top.i < top.entries.length) {
      if (top.i > 0) out.push(top.sep);
      const [prefix, value] = top.entries[top.i++]!;
      if (prefix) out.push(prefix);
      next = value;
      pending = true;
    } else {
      open.pop();
      out.push(top.close);
    }
  }
}

const plainV: Printer = {
  nil: '<nil>',
  scalar: (x) => (typeof x === 'number' ? goNumber(x) : String(x)),
  list: ['[', ' ', ']'],
  map: ['map[', ' ', ']'],
  key: (k) => `${k}:`,
};

const sharpV: Printer = {
  nil: 'interface {}(nil)',
  scalar: (x) => (typeof x === 'string' ? goQuote(x) : typeof x === 'number' ? goNumber(x) : String(x)),
  list: ['[]interface {}{', ', ', '}'],
  map: ['map[string]interface {}{', ', ', '}'],
  key: (k) => `${goQuote(k)}:`,
};

const json: Printer = {
  nil: 'null',
  scalar: (x) => (typeof x === 'string' ? goJsonString(x) : JSON.stringify(x)),
  list: ['[', ',', ']'],
  map: ['{', ',', '}'],
  key: (k) => `${goJsonString(k)}:`,
};

/** %v of a decoded JSON value. */
export function goV(v: JsonValue | undefined): string {
  if (v === null || v === undefined) return '<nil>';
  if (typeof v !== 'object') return plainV.scalar(v);
  return print(v, plainV);
}

/** %#v of a decoded JSON value. */
export function goSharpV(v: JsonValue | undefined): string {
  if (v === null || v === undefined) return 'interface {}(nil)';
  if (typeof v !== 'object') return sharpV.scalar(v);
  return print(v, sharpV);
}

/** encoding/json string encoding: HTML characters and U+2028/U+2029 escaped, as jsoniter's compatible mode writes. */
export function goJsonString(s: string): string {
  let plain = true;
  for (let i = 0; i < s.length && plain; i++) plain = !needsEscape(s.charCodeAt(i));
  if (plain) return `"${s}"`;
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!needsEscape(c)) out += s[i];
    else if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += '\\\\';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += '\\t';
    else out += `\\u${c.toString(16).padStart(4, '0')}`;
  }
  return `${out}"`;
}

const needsEscape = (c: number): boolean => c < 0x20 || c === 0x22 || c === 0x5c || c === 0x3c || c === 0x3e || c === 0x26 || c === 0x2028 || c === 0x2029;

/** encoding/json of a decoded value; object keys sorted as Go's map encoder does. */
export function goJson(v: JsonValue | undefined): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return goJsonString(v);
  if (typeof v === 'number' || typeof v === 'boolean') return JSON.stringify(v);
  return print(v, json);
}
