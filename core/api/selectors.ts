/**
 * Label and field selectors as the `labelSelector` / `fieldSelector` query parameters and
 * metav1.LabelSelector objects express them. The label grammar, its key/value validation and every
 * parse-error message follow upstream's labels package (a lexer over bytes, a one-token-lookahead
 * parser, requirements sorted by key); field selectors follow upstream's fields package (terms split
 * on unescaped commas, `\,` `\=` `\\` escapes). Errors are thrown as SelectorParseError.
 */
import { type FieldError, fieldErrors } from './field-errors.js';
import { goQuote, goStringSlice, invalidEach, isQualifiedName, isValidLabelValue, validateLabels } from './validation.js';

export class SelectorParseError extends Error {
  override name = 'SelectorParseError';
}

// ---------------------------------------------------------------------------------------------
// Label selectors

/** upstream's selection.Operator values. */
export type LabelOperator = '=' | '==' | '!=' | 'in' | 'notin' | 'exists' | '!' | 'gt' | 'lt';

export interface LabelRequirement {
  readonly key: string;
  readonly operator: LabelOperator;
  /** Parsed `in`/`notin` sets are sorted and unique; others keep their order. */
  readonly values: readonly string[];
}

export interface LabelSelector {
  /** True for a selector without requirements (it matches everything). */
  readonly empty: boolean;
  readonly requirements: readonly LabelRequirement[];
  matches(labels: Readonly<Record<string, string>> | undefined): boolean;
  /** The value a requirement `key=v`, `key==v` or `key in (v)` pins the label to, if any. */
  exactMatch(key: string): string | undefined;
  toString(): string;
}

const binaryOperators: readonly LabelOperator[] = ['in', 'notin', '=', '==', '!=', 'gt', 'lt'];
const validOperators: readonly LabelOperator[] = [...binaryOperators, 'exists', '!'];

const int64Re = /^[+-]?[0-9]+$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Go's strconv.ParseInt(s, 10, 64); undefined when it would fail. */
function parseInt64(s: string): bigint | undefined {
  if (!int64Re.test(s)) return undefined;
  const v = BigInt(s);
  return v < INT64_MIN || v > INT64_MAX ? undefined : v;
}

function requirementMatches(r: LabelRequirement, labels: Readonly<Record<string, string>>): boolean {
  switch (r.operator) {
    case 'in':
    case '=':
    case '==':
      return Object.hasOwn(labels, r.key) && r.values.includes(labels[r.key]!);
    case 'notin':
    case '!=':
      return !Object.hasOwn(labels, r.key) || !r.values.includes(labels[r.key]!);
    case 'exists':
      return Object.hasOwn(labels, r.key);
    case '!':
      return !Object.hasOwn(labels, r.key);
    case 'gt':
    case 'lt': {
      if (!Object.hasOwn(labels, r.key) || r.values.length !== 1) return false;
      const actual = parseInt64(labels[r.key]!);
      const bound = parseInt64(r.values[0]!);
      if (actual === undefined || bound === undefined) return false;
      return r.operator === 'gt' ? actual > bound : actual < bound;
    }
    default:
      return false;
  }
}

const sortedCopy = (values: readonly string[]): string[] => [...values].sort();

function requirementString(r: LabelRequirement): string {
  if (r.operator === '!') return `!${r.key}`;
  if (r.operator === 'exists') return r.key;
  const op = r.operator === 'in' ? ' in ' : r.operator === 'notin' ? ' notin ' : r.operator === 'gt' ? '>' : r.operator === 'lt' ? '<' : r.operator;
  const values = r.values.length === 1 ? r.values[0]! : sortedCopy(r.values).join(',');
  return r.operator === 'in' || r.operator === 'notin' ? `${r.key}${op}(${values})` : `${r.key}${op}${values}`;
}

class RequirementSelector implements LabelSelector {
  readonly empty: boolean;
  constructor(readonly requirements: readonly LabelRequirement[]) {
    this.empty = requirements.length === 0;
  }
  matches(labels: Readonly<Record<string, string>> | undefined): boolean {
    const ls = labels ?? {};
    for (const r of this.requirements) if (!requirementMatches(r, ls)) return false;
    return true;
  }
  exactMatch(key: string): string | undefined {
    for (const r of this.requirements) {
      if (r.key !== key) continue;
      return (r.operator === '=' || r.operator === '==' || r.operator === 'in') && r.values.length === 1 ? r.values[0] : undefined;
    }
    return undefined;
  }
  toString(): string {
    return this.requirements.map(requirementString).join(',');
  }
}

/** Matches nothing: what a nil metav1.LabelSelector means. */
const nothingSelector: LabelSelector = {
  empty: false,
  requirements: [],
  matches: () => false,
  exactMatch: () => undefined,
  toString: () => '',
};

export const everythingLabelSelector: LabelSelector = new RequirementSelector([]);

const byKey = (a: LabelRequirement, b: LabelRequirement): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

// Field paths of requirement errors; an absent base renders as Go's nil path does.
const childPath = (base: string | undefined, name: string): string => (base ? `${base}.${name}` : name);
const pathText = (base: string | undefined): string => base ?? '<nil>';

/** Go's ErrorList.ToAggregate().Error(): deduplicated, bracketed when more than one. */
function aggregate(messages: readonly string[]): string {
  const unique = [...new Set(messages)];
  return unique.length === 1 ? unique[0]! : `[${unique.join(', ')}]`;
}

function keyError(key: string, path: string): string | undefined {
  const msgs = isQualifiedName(key);
  return msgs.length ? `${path}: Invalid value: ${goQuote(key)}: ${msgs.join('; ')}` : undefined;
}

/** upstream's NewRequirement: validates key, operator arity and values; throws the aggregate error. */
function newRequirement(key: string, operator: string, values: readonly string[] | null, path?: string): LabelRequirement {
  const errs: string[] = [];
  const kErr = keyError(key, childPath(path, 'key'));
  if (kErr) errs.push(kErr);
  const valuePath = childPath(path, 'values');
  const vals = values ?? [];
  const invalidValues = (detail: string): string => `${valuePath}: Invalid value: ${goStringSlice(values)}: ${detail}`;
  switch (operator) {
    case 'in':
    case 'notin':
      if (vals.length === 0) errs.push(invalidValues("for 'in', 'notin' operators, values set can't be empty"));
      break;
    case '=':
    case '==':
    case '!=':
      if (vals.length !== 1) errs.push(invalidValues('exact-match compatibility requires one single value'));
      break;
    case 'exists':
    case '!':
      if (vals.length !== 0) errs.push(invalidValues('values set must be empty for exists and does not exist'));
      break;
    case 'gt':
    case 'lt':
      if (vals.length !== 1) errs.push(invalidValues("for 'Gt', 'Lt' operators, exactly one value is required"));
      vals.forEach((v, i) => {
        if (parseInt64(v) === undefined) {
          errs.push(`${valuePath}[${i}]: Invalid value: ${goQuote(v)}: for 'Gt', 'Lt' operators, the value must be an integer`);
        }
      });
      break;
    default:
      errs.push(
        `${childPath(path, 'operator')}: Unsupported value: ${goQuote(operator)}: supported values: ${validOperators.map((o) => goQuote(o)).join(', ')}`,
      );
  }
  vals.forEach((v, i) => {
    const msgs = isValidLabelValue(v);
    if (msgs.length) errs.push(`${valuePath}[${i}][${key}]: Invalid value: ${goQuote(v)}: ${msgs.join('; ')}`);
  });
  if (errs.length) throw new SelectorParseError(aggregate(errs));
  return { key, operator: operator as LabelOperator, values: vals };
}

// Lexer tokens, as upstream names them.
const enum Tok {
  Error,
  EndOfString,
  ClosedPar,
  Comma,
  DoesNotExist,
  DoubleEquals,
  Equals,
  GreaterThan,
  Identifier,
  In,
  LessThan,
  NotEquals,
  NotIn,
  OpenPar,
}

const keywordTokens: Readonly<Record<string, Tok>> = {
  ')': Tok.ClosedPar,
  ',': Tok.Comma,
  '!': Tok.DoesNotExist,
  '==': Tok.DoubleEquals,
  '=': Tok.Equals,
  '>': Tok.GreaterThan,
  in: Tok.In,
  '<': Tok.LessThan,
  '!=': Tok.NotEquals,
  notin: Tok.NotIn,
  '(': Tok.OpenPar,
};

interface Token {
  tok: Tok;
  lit: string;
}

const isWhitespace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
// = ! ( ) , > <
const isSpecial = (c: number): boolean => c === 0x3d || c === 0x21 || c === 0x28 || c === 0x29 || c === 0x2c || c === 0x3e || c === 0x3c;

/** Splits the selector text into tokens, ending with EndOfString (a NUL also ends it, as upstream). */
function lex(s: string): Token[] {
  const out: Token[] = [];
  let pos = 0;
  const read = (): number => (pos < s.length ? s.charCodeAt(pos++) : 0);
  for (;;) {
    let c = read();
    while (isWhitespace(c)) c = read();
    if (c === 0) {
      out.push({ tok: Tok.EndOfString, lit: '' });
      return out;
    }
    const start = pos - 1;
    if (isSpecial(c)) {
      // Longest run of special characters that still forms a token.
      let end = start + 1;
      let found: Tok | undefined = keywordTokens[s.slice(start, end)];
      while (end < s.length && isSpecial(s.charCodeAt(end))) {
        const t: Tok | undefined = keywordTokens[s.slice(start, end + 1)];
        if (t === undefined) {
          if (found !== undefined) break;
        } else {
          found = t;
        }
        end++;
      }
      pos = end;
      out.push(found === undefined ? { tok: Tok.Error, lit: `error expected: keyword found '${s.slice(start, end)}'` } : { tok: found, lit: s.slice(start, end) });
    } else {
      let end = pos;
      while (end < s.length) {
        const d = s.charCodeAt(end);
        if (isSpecial(d) || isWhitespace(d)) break;
        if (d === 0) {
          // upstream's reader stops at a NUL and consumes it
          pos = end + 1;
          break;
        }
        end++;
        pos = end;
      }
      const lit = s.slice(start, end);
      out.push({ tok: keywordTokens[lit] ?? Tok.Identifier, lit });
    }
  }
}

/** Parser contexts: in a value position the words `in` and `notin` are plain identifiers. */
const enum Ctx {
  KeyAndOperator,
  Values,
}

class LabelParser {
  private position = 0;
  constructor(private readonly items: readonly Token[]) {}

  private lookahead(ctx: Ctx): Token {
    return this.asContext(this.items[this.position]!, ctx);
  }
  private consume(ctx: Ctx): Token {
    return this.asContext(this.items[this.position++]!, ctx);
  }
  private asContext(t: Token, ctx: Ctx): Token {
    return ctx === Ctx.Values && (t.tok === Tok.In || t.tok === Tok.NotIn) ? { tok: Tok.Identifier, lit: t.lit } : t;
  }

  parse(): LabelRequirement[] {
    const reqs: LabelRequirement[] = [];
    for (;;) {
      const { tok, lit } = this.lookahead(Ctx.Values);
      if (tok === Tok.EndOfString) return reqs;
      if (tok !== Tok.Identifier && tok !== Tok.DoesNotExist) throw new SelectorParseError(`found '${lit}', expected: !, identifier, or 'end of string'`);
      try {
        reqs.push(this.parseRequirement());
      } catch (e) {
        throw new SelectorParseError(`unable to parse requirement: ${(e as Error).message}`);
      }
      const next = this.consume(Ctx.Values);
      if (next.tok === Tok.EndOfString) return reqs;
      if (next.tok !== Tok.Comma) throw new SelectorParseError(`found '${next.lit}', expected: ',' or 'end of string'`);
      const after = this.lookahead(Ctx.Values);
      if (after.tok !== Tok.Identifier && after.tok !== Tok.DoesNotExist) {
        throw new SelectorParseError(`found '${after.lit}', expected: identifier after ','`);
      }
    }
  }

  private parseRequirement(): LabelRequirement {
    const { key, operator } = this.parseKeyAndInferOperator();
    if (operator === 'exists' || operator === '!') return newRequirement(key, operator, []);
    const op = this.parseOperator();
    const values = op === 'in' || op === 'notin' ? this.parseValues() : this.parseExactValue();
    return newRequirement(key, op, [...values].sort());
  }

  private parseKeyAndInferOperator(): { key: string; operator: LabelOperator | '' } {
    let operator: LabelOperator | '' = '';
    let t = this.consume(Ctx.Values);
    if (t.tok === Tok.DoesNotExist) {
      operator = '!';
      t = this.consume(Ctx.Values);
    }
    if (t.tok !== Tok.Identifier) throw new SelectorParseError(`found '${t.lit}', expected: identifier`);
    const kErr = keyError(t.lit, pathText(undefined));
    if (kErr) throw new SelectorParseError(kErr);
    const next = this.lookahead(Ctx.Values).tok;
    if ((next === Tok.EndOfString || next === Tok.Comma) && operator !== '!') operator = 'exists';
    return { key: t.lit, operator };
  }

  private parseOperator(): LabelOperator {
    const { tok, lit } = this.consume(Ctx.KeyAndOperator);
    switch (tok) {
      case Tok.In:
        return 'in';
      case Tok.Equals:
        return '=';
      case Tok.DoubleEquals:
        return '==';
      case Tok.GreaterThan:
        return 'gt';
      case Tok.LessThan:
        return 'lt';
      case Tok.NotIn:
        return 'notin';
      case Tok.NotEquals:
        return '!=';
      default:
        throw new SelectorParseError(`found '${lit}', expected: ${binaryOperators.join(', ')}`);
    }
  }

  private parseValues(): Set<string> {
    const open = this.consume(Ctx.Values);
    if (open.tok !== Tok.OpenPar) throw new SelectorParseError(`found '${open.lit}' expected: '('`);
    const { tok, lit } = this.lookahead(Ctx.Values);
    if (tok === Tok.Identifier || tok === Tok.Comma) {
      const s = this.parseIdentifiersList();
      if (this.consume(Ctx.Values).tok !== Tok.ClosedPar) throw new SelectorParseError(`found '${lit}', expected: ')'`);
      return s;
    }
    if (tok === Tok.ClosedPar) {
      this.consume(Ctx.Values);
      return new Set(['']);
    }
    throw new SelectorParseError(`found '${lit}', expected: ',', ')' or identifier`);
  }

  private parseIdentifiersList(): Set<string> {
    const s = new Set<string>();
    for (;;) {
      const { tok, lit } = this.consume(Ctx.Values);
      if (tok === Tok.Identifier) {
        s.add(lit);
        const next = this.lookahead(Ctx.Values);
        if (next.tok === Tok.Comma) continue;
        if (next.tok === Tok.ClosedPar) return s;
        throw new SelectorParseError(`found '${next.lit}', expected: ',' or ')'`);
      }
      if (tok === Tok.Comma) {
        // An empty element: "(,", ",,", ",)" each stand for the empty value.
        if (s.size === 0) s.add('');
        const next = this.lookahead(Ctx.Values).tok;
        if (next === Tok.ClosedPar) {
          s.add('');
          return s;
        }
        if (next === Tok.Comma) {
          this.consume(Ctx.Values);
          s.add('');
        }
        continue;
      }
      throw new SelectorParseError(`found '${lit}', expected: ',', or identifier`);
    }
  }

  private parseExactValue(): Set<string> {
    const next = this.lookahead(Ctx.Values).tok;
    if (next === Tok.EndOfString || next === Tok.Comma) return new Set(['']);
    const { tok, lit } = this.consume(Ctx.Values);
    if (tok === Tok.Identifier) return new Set([lit]);
    throw new SelectorParseError(`found '${lit}', expected: identifier`);
  }
}

/** Parses a `labelSelector` query value (`a=b,c!=d,e in (f,g),!h,i,j>1`). */
export function parseLabelSelector(text: string): LabelSelector {
  const reqs = new LabelParser(lex(text)).parse();
  return new RequirementSelector(reqs.sort(byKey));
}

export interface LabelSelectorRequirementObject {
  key?: string;
  operator?: string;
  values?: readonly string[] | null;
}

export interface LabelSelectorObject {
  matchLabels?: Readonly<Record<string, string>> | null;
  matchExpressions?: readonly LabelSelectorRequirementObject[] | null;
}

const objectOperators: Readonly<Record<string, LabelOperator>> = { In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: '!' };

/**
 * A metav1.LabelSelector as a selector (upstream's LabelSelectorAsSelector): absent matches nothing,
 * empty matches everything; invalid keys, values or operators throw SelectorParseError.
 */
export function labelSelectorFromObject(sel: LabelSelectorObject | null | undefined): LabelSelector {
  if (!sel) return nothingSelector;
  const labels = sel.matchLabels ?? {};
  const exprs = sel.matchExpressions ?? [];
  const keys = Object.keys(labels);
  if (keys.length + exprs.length === 0) return everythingLabelSelector;
  const reqs: LabelRequirement[] = [];
  for (const k of keys) reqs.push(newRequirement(k, '=', [labels[k]!]));
  for (const e of exprs) {
    const op = objectOperators[e.operator ?? ''];
    if (!op) throw new SelectorParseError(`${goQuote(e.operator ?? '')} is not a valid label selector operator`);
    reqs.push(newRequirement(e.key ?? '', op, e.values && e.values.length ? [...e.values] : null));
  }
  return new RequirementSelector(reqs.sort(byKey));
}

export interface LabelSelectorValidationOptions {
  allowInvalidLabelValueInSelector?: boolean;
  allowUnknownOperatorInRequirement?: boolean;
}

/** Field errors of a metav1.LabelSelector value (upstream's ValidateLabelSelector). */
export function validateLabelSelector(sel: LabelSelectorObject | null | undefined, path: string, opts: LabelSelectorValidationOptions = {}): FieldError[] {
  const errs: FieldError[] = [];
  if (!sel) return errs;
  errs.push(...validateLabels(sel.matchLabels ?? undefined, `${path}.matchLabels`));
  (sel.matchExpressions ?? []).forEach((e, i) => {
    const p = `${path}.matchExpressions[${i}]`;
    const values = e.values ?? [];
    switch (e.operator) {
      case 'In':
      case 'NotIn':
        if (values.length === 0) errs.push(fieldErrors.required(`${p}.values`, "must be specified when `operator` is 'In' or 'NotIn'"));
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0) errs.push(fieldErrors.forbidden(`${p}.values`, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
        break;
      default:
        if (!opts.allowUnknownOperatorInRequirement) errs.push(fieldErrors.invalid(`${p}.operator`, e.operator ?? '', 'not a valid selector operator'));
    }
    const key = e.key ?? '';
    errs.push(...invalidEach(`${p}.key`, key, isQualifiedName(key)));
    if (!opts.allowInvalidLabelValueInSelector) {
      values.forEach((v, j) => {
        errs.push(...invalidEach(`${p}.values[${j}]`, v, isValidLabelValue(v)));
      });
    }
  });
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Field selectors

export interface FieldRequirement {
  readonly field: string;
  readonly operator: '=' | '!=';
  readonly value: string;
}

export interface FieldSelector {
  readonly empty: boolean;
  readonly requirements: readonly FieldRequirement[];
  /** Absent fields compare as the empty string, as upstream's fields.Set does. */
  matches(fields: Readonly<Record<string, string | undefined>>): boolean;
  /** The value an `=` / `==` term pins the field to (the metadata.name / namespace fast paths). */
  exactMatch(field: string): string | undefined;
  toString(): string;
}

const escapeFieldValue = (v: string): string => v.replace(/[\\,=]/g, (c) => `\\${c}`);

class TermSelector implements FieldSelector {
  readonly empty: boolean;
  constructor(readonly requirements: readonly FieldRequirement[]) {
    this.empty = requirements.length === 0;
  }
  matches(fields: Readonly<Record<string, string | undefined>>): boolean {
    for (const r of this.requirements) {
      const actual = fields[r.field] ?? '';
      if ((actual === r.value) !== (r.operator === '=')) return false;
    }
    return true;
  }
  exactMatch(field: string): string | undefined {
    for (const r of this.requirements) if (r.operator === '=' && r.field === field) return r.value;
    return undefined;
  }
  toString(): string {
    return this.requirements.map((r) => `${r.field}${r.operator}${escapeFieldValue(r.value)}`).join(',');
  }
}

/** Splits on commas not escaped by a backslash. */
function splitTerms(selector: string): string[] {
  if (selector.length === 0) return [];
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') {
      terms.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(selector.slice(start));
  return terms;
}

const termOperators = ['!=', '==', '='] as const;

function splitTerm(term: string): { lhs: string; op: (typeof termOperators)[number]; rhs: string } | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of termOperators) {
      if (term.startsWith(op, i)) return { lhs: term.slice(0, i), op, rhs: term.slice(i + op.length) };
    }
  }
  return undefined;
}

function unescapeFieldValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c !== '\\' && c !== ',' && c !== '=') throw new SelectorParseError(`invalid field selector: invalid escape sequence: \\${c}`);
      out += c;
      inSlash = false;
    } else if (c === '\\') {
      inSlash = true;
    } else if (c === ',' || c === '=') {
      // Go prints the rune as a number here.
      throw new SelectorParseError(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`);
    } else {
      out += c;
    }
  }
  if (inSlash) throw new SelectorParseError('invalid field selector: invalid escape sequence: \\');
  return out;
}

/** Parses a `fieldSelector` query value (`metadata.name=x,status.phase!=Active`). */
export function parseFieldSelector(text: string): FieldSelector {
  const parts = splitTerms(text).sort();
  const reqs: FieldRequirement[] = [];
  for (const part of parts) {
    if (part === '') continue;
    const t = splitTerm(part);
    if (!t) throw new SelectorParseError(`invalid selector: '${text}'; can't understand '${part}'`);
    reqs.push({ field: t.lhs, operator: t.op === '!=' ? '!=' : '=', value: unescapeFieldValue(t.rhs) });
  }
  return new TermSelector(reqs);
}

/** A selector that requires each field to equal the given value. */
export function fieldSelectorFromSet(set: Readonly<Record<string, string>>): FieldSelector {
  return new TermSelector(Object.keys(set).map((field) => ({ field, operator: '=' as const, value: set[field]! })));
}
