/**
 * Go's encoding/json syntax error messages (`invalid character 'x' looking for beginning of value`,
 * `unexpected end of JSON input`, ...) for text JSON.parse rejected. Runs only on the error path,
 * so clients see the same wording from this server as from upstream.
 */

function quoteChar(c: string): string {
  if (c === "'") return "'\\''";
  if (c === '"') return '\'"\'';
  const code = c.codePointAt(0)!;
  if (code < 0x20 || code === 0x7f) return JSON.stringify(c);
  return `'${c}'`;
}

class GoSyntaxError extends Error {}

/** Returns Go's message for the first syntax error in `s`, or undefined when `s` is valid JSON. */
export function goJsonSyntaxError(s: string): string | undefined {
  let i = 0;
  const end = (): never => {
    throw new GoSyntaxError('unexpected end of JSON input');
  };
  const bad = (context: string): never => {
    if (i >= s.length) end();
    throw new GoSyntaxError(`invalid character ${quoteChar(String.fromCodePoint(s.codePointAt(i)!))} ${context}`);
  };
  const ws = () => {
    while (i < s.length && ' \t\r\n'.includes(s[i]!)) i++;
  };
  const literal = (word: string) => {
    for (let k = 0; k < word.length; k++, i++) {
      if (i >= s.length) end();
      if (s[i] !== word[k]) bad(`in literal ${word} (expecting ${quoteChar(word[k]!)})`);
    }
  };
  const string = () => {
    i++; // opening quote
    for (;;) {
      if (i >= s.length) end();
      const c = s[i]!;
      if (c === '"') {
        i++;
        return;
      }
      if (c === '\\') {
        i++;
        if (i >= s.length) end();
        const e = s[i]!;
        if ('"\\/bfnrt'.includes(e)) i++;
        else if (e === 'u') {
          i++;
          for (let k = 0; k < 4; k++, i++) {
            if (i >= s.length) end();
            if (!/[0-9a-fA-F]/.test(s[i]!)) bad('in \\u hexadecimal character escape');
          }
        } else bad('in string escape code');
        continue;
      }
      if (c.charCodeAt(0) < 0x20) bad('in string literal');
      i++;
    }
  };
  const digits = () => {
    while (i < s.length && s[i]! >= '0' && s[i]! <= '9') i++;
  };
  const number = () => {
    if (s[i] === '-') {
      i++;
      if (i >= s.length) end();
      if (!(s[i]! >= '0' && s[i]! <= '9')) bad('in numeric literal');
    }
    if (s[i] === '0') i++;
    else digits();
    if (s[i] === '.') {
      i++;
      if (i >= s.length) end();
      if (!(s[i]! >= '0' && s[i]! <= '9')) bad('after decimal point in numeric literal');
      digits();
    }
    if (s[i] === 'e' || s[i] === 'E') {
      i++;
      if (s[i] === '+' || s[i] === '-') i++;
      if (i >= s.length) end();
      if (!(s[i]! >= '0' && s[i]! <= '9')) bad('in exponent of numeric literal');
      digits();
    }
  };
  const value = (): void => {
    ws();
    if (i >= s.length) end();
    const c = s[i]!;
    if (c === '{') return object();
    if (c === '[') return array();
    if (c === '"') return string();
    if (c === '-' || (c >= '0' && c <= '9')) return number();
    if (c === 't') return literal('true');
    if (c === 'f') return literal('false');
    if (c === 'n') return literal('null');
    bad('looking for beginning of value');
  };
  const object = () => {
    i++;
    ws();
    if (s[i] === '}') {
      i++;
      return;
    }
    for (;;) {
      ws();
      if (i >= s.length) end();
      if (s[i] !== '"') bad('looking for beginning of object key string');
      string();
      ws();
      if (i >= s.length) end();
      if (s[i] !== ':') bad('after object key');
      i++;
      value();
      ws();
      if (i >= s.length) end();
      if (s[i] === ',') {
        i++;
        continue;
      }
      if (s[i] === '}') {
        i++;
        return;
      }
      bad('after object key:value pair');
    }
  };
  const array = () => {
    i++;
    ws();
    if (s[i] === ']') {
      i++;
      return;
    }
    for (;;) {
      value();
      ws();
      if (i >= s.length) end();
      if (s[i] === ',') {
        i++;
        continue;
      }
      if (s[i] === ']') {
        i++;
        return;
      }
      bad('after array element');
    }
  };
  try {
    value();
    ws();
    if (i < s.length) bad('after top-level value');
    return undefined;
  } catch (e) {
    if (e instanceof GoSyntaxError) return e.message;
    throw e;
  }
}
