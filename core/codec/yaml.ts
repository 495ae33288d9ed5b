/**
 * YAML request and response bodies. Upstream converts YAML 1.1 (go-yaml v2) to JSON, so `yes`/`on`
 * are booleans and `0777` is octal; timestamps stay strings (they are decoded into plain values, not
 * time types). Output is JSON turned into YAML with sorted keys and unindented sequences, the way
 * upstream's YAML printer writes it.
 */
import type { Document, LineCounter, Parser, YAMLError } from 'yaml';
import { yamlLibrary } from './yaml-library.js';
import { JsonSyntaxError } from './json.js';
import { StatusError } from '../api/status.js';
import { MAX_YAML_DEPTH, MAX_YAML_TOKENS } from './limits.js';
import { documentValue, duplicateKeys, resolveAliases, yamlError } from './yaml-values.js';

export { yamlDuplicateKey } from './yaml-values.js';

export interface DecodedYaml {
  value: unknown;
  /** Duplicate keys, worded as upstream's YAML strict decoder: `line 5: key "x" already set in map`. */
  duplicates: string[];
}

const withoutTimestamps = (tags: unknown[]): unknown[] =>
  tags.filter((t) => (t as { tag?: string }).tag !== 'tag:yaml.org,2002:timestamp');

const composeOptions = { version: '1.1', uniqueKeys: false, customTags: withoutTimestamps as never } as const;

/** go-yaml's error for nesting past `limit` at `line` (it names the line of a scanner error only past the first). */
export const yamlDepthError = (line: number, limit = MAX_YAML_DEPTH): JsonSyntaxError =>
  yamlError(`${line > 1 ? `line ${line}: ` : ''}exceeded max depth of ${limit}`);

/** What the lexer saw while the document was parsed. */
interface LexStats {
  lexemes: number;
}

/**
 * The CST tokens of `text`, refused as soon as collections nest past MAX_YAML_DEPTH (the parser's
 * stack holds the document and one entry per open collection) or the lexemes pass MAX_YAML_TOKENS,
 * so a hostile body stops early, before the (recursive, and slow per token) composer sees it.
 */
function* checkedTokens(text: string, lc: LineCounter, stats: LexStats): Generator<ReturnType<Parser['next']> extends Generator<infer T> ? T : never> {
  const { Parser, Lexer } = yamlLibrary();
  const parser = new Parser(lc.addNewLine);
  lc.addNewLine(0);
  for (const lexeme of new Lexer().lex(text)) {
    if (++stats.lexemes > MAX_YAML_TOKENS) {
      throw new StatusError(413, 'RequestEntityTooLarge', `Request entity too large: a YAML body may hold at most ${MAX_YAML_TOKENS} tokens; send larger objects as JSON`);
    }
    yield* parser.next(lexeme);
    if (parser.stack.length - 1 > MAX_YAML_DEPTH) throw yamlDepthError(lc.linePos(parser.offset).line);
  }
  yield* parser.end();
}

/** The first line of the yaml package's message with its position, as its pretty errors word it. */
function positioned(e: YAMLError, text: string, lc: LineCounter): { line: number | undefined; message: string } {
  const first = e.message.split('\n')[0]!;
  if (e.pos[0] < 0) return { line: undefined, message: first };
  const { line, col } = lc.linePos(e.pos[0]);
  // the pretty form ends the position with a colon when it shows a non-blank source excerpt
  const lineText = text.substring(lc.lineStarts[line - 1]!, lc.lineStarts[line] ?? text.length).replace(/[\n\r]+$/, '');
  const before = line > 1 && /^ *$/.test(lineText.substring(0, col - 1)) ? text.substring(lc.lineStarts[line - 2]!, lc.lineStarts[line - 1]) : '';
  const excerpt = before + lineText;
  return { line, message: `${first} at line ${line}, column ${col}${/[^ ]/.test(excerpt) ? ':' : ''}` };
}

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
  const { LineCounter, Composer } = yamlLibrary();
  const lineCounter = new LineCounter();
  const stats: LexStats = { lexemes: 0 };
  const docs: Document.Parsed[] = Array.from(new Composer(composeOptions).compose(checkedTokens(text, lineCounter, stats)));
  for (const d of docs) {
    if (d.errors.length) {
      const { line, message } = positioned(d.errors[0]!, text, lineCounter);
      throw new JsonSyntaxError(`error converting YAML to JSON: yaml: ${line ? `line ${line}: ` : ''}${message}`);
    }
  }
  const nonEmpty = docs.filter((d) => d.contents !== null);
  if (nonEmpty.length > 1) throw new JsonSyntaxError('error converting YAML to JSON: yaml: the body holds more than one document');
  const doc = nonEmpty[0];
  if (!doc) return { value: null, duplicates: [] };
  const root = doc.contents;
  return { value: documentValue(root, resolveAliases(root)), duplicates: duplicateKeys(root, lineCounter) };
}

/**
 * Writes a JSON value as YAML: keys sorted, sequences not indented under their key, and an object that
 * occurs twice in the value written twice (never as an anchor and alias, which JSON cannot express).
 */
export function encodeYaml(value: unknown): string {
  return yamlLibrary().stringify(value, { sortMapEntries: true, indentSeq: false, lineWidth: 0, version: '1.1', aliasDuplicateObjects: false });
}
