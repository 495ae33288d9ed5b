/**
 * JSON and YAML request bodies as text: the value and the duplicate keys field validation reports.
 * JSON is YAML, so a YAML body that parses as JSON takes the fast JSON path (any size), with its
 * duplicates and its depth error worded as the YAML decoder words them.
 */
import { goQuote } from '../api/validation.js';
import { decodeJson, JsonDepthError, JsonSyntaxError } from './json.js';
import { MAX_JSON_DEPTH } from './limits.js';
import type { DecodedBody } from './serializer.js';
import { decodeYaml, yamlDepthError, yamlDuplicateKey } from './yaml.js';

/** 1-based lines of ascending `offsets` in `text`, in one pass. */
function linesAt(text: string, offsets: readonly number[]): number[] {
  const out: number[] = [];
  let line = 1;
  let nl = text.indexOf('\n');
  for (const offset of offsets) {
    while (nl >= 0 && nl < offset) {
      line++;
      nl = text.indexOf('\n', nl + 1);
    }
    out.push(line);
  }
  return out;
}

/** Parses JSON or YAML text; syntax errors are JsonSyntaxError (callers word them for their context). */
export function parseTextBody(body: Uint8Array, yaml: boolean): DecodedBody {
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  if (yaml) {
    if (/^\s*\{/.test(text)) {
      try {
        const j = decodeJson(text);
        const lines = linesAt(
          text,
          j.duplicateKeys.map((d) => d.offset),
        );
        return { value: j.value, duplicates: j.duplicateKeys.map((d, i) => yamlDuplicateKey(d.key, lines[i]!)) };
      } catch (e) {
        // JSON nested past the limit is past go-yaml's flow-level limit too (the same 10000)
        if (e instanceof JsonDepthError) throw yamlDepthError(linesAt(text, [e.offset])[0]!, MAX_JSON_DEPTH);
        if (!(e instanceof JsonSyntaxError)) throw e;
      }
    }
    const y = decodeYaml(text);
    return { value: y.value, duplicates: y.duplicates };
  }
  if (text.trim() === '') throw new JsonSyntaxError('unexpected end of JSON input');
  const j = decodeJson(text);
  return { value: j.value, duplicates: j.duplicates.map((d) => `duplicate field ${goQuote(d)}`) };
}
