/**
 * Request-body decoding against hostile input (issue 7): JSON nesting stops at Go's 10000 with its
 * message and precedence, walked without recursion; YAML nesting stops at MAX_YAML_DEPTH before the
 * composer runs, its tokens at MAX_YAML_TOKENS; aliases follow go-yaml (excessive aliasing, unknown
 * and self-containing anchors, merge keys); protobuf map entries without a value decode as zero.
 */
import t from 'tap';
import protobuf from 'protobufjs';
import { decodeJson, JsonDepthError, JsonSyntaxError } from '../../core/codec/json.js';
import { goJsonSyntaxError } from '../../core/codec/json-syntax.js';
import { MAX_JSON_DEPTH, MAX_YAML_DEPTH, MAX_YAML_TOKENS } from '../../core/codec/limits.js';
import { decodeYaml } from '../../core/codec/yaml.js';
import { allowedAliasRatio } from '../../core/codec/yaml-values.js';
import { decodeProtobufObject } from '../../core/codec/protobuf.js';
import { messageType, PROTOBUF_MAGIC, RUNTIME } from '../../core/codec/protobuf/proto-root.js';
import { StatusError } from '../../core/api/status.js';
import { registerProtobufKind } from '../../core/codec/protobuf/kinds.js';

const arrays = (n: number): string => '['.repeat(n) + ']'.repeat(n);

function errorOf(f: () => unknown): Error | undefined {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  return undefined;
}

t.test('JSON: 10000 levels decode, 10001 are Go\'s "exceeded max depth" at the bracket one too many', async (t) => {
  t.equal(MAX_JSON_DEPTH, 10000);
  t.same(decodeJson(`{"a":${arrays(9999)}}`).duplicates, [], '10000 levels including the outer object');
  const e = errorOf(() => decodeJson(`{"a":${arrays(10000)}}`));
  t.type(e, JsonDepthError);
  t.equal(e?.message, "invalid character '[' exceeded max depth");
  t.equal((e as JsonDepthError).offset, 5 + 9999, 'offset of the 10001st bracket');
  t.equal(errorOf(() => decodeJson('{"a":'.repeat(10001) + '1' + '}'.repeat(10001)))?.message, "invalid character '{' exceeded max depth");
});

t.test('JSON: a deep document that is also malformed reports whichever error Go\'s scanner meets first', async (t) => {
  t.equal(goJsonSyntaxError(Buffer.from(`[x${'['.repeat(20000)}`)), "invalid character 'x' looking for beginning of value", 'syntax error first');
  t.equal(goJsonSyntaxError(Buffer.from(`${'['.repeat(20000)}x`)), "invalid character '[' exceeded max depth", 'depth first');
  t.equal(goJsonSyntaxError(Buffer.from('['.repeat(200000))), "invalid character '[' exceeded max depth", 'no recursion at any length');
  t.equal(goJsonSyntaxError(Buffer.from(arrays(10000))), undefined, 'valid at the limit');
  const e = errorOf(() => decodeJson('['.repeat(10001) + ']'.repeat(10000)));
  t.type(e, JsonSyntaxError);
  t.equal(e?.message, "invalid character '[' exceeded max depth", 'JSON.parse fails on the truncated text, Go names the depth');
});

t.test('JSON: duplicate keys are found at any depth, with their paths and offsets', async (t) => {
  const deep = '{"a":'.repeat(5000) + '{"k":1,"k":2}' + '}'.repeat(5000);
  const d = decodeJson(deep);
  t.equal(d.duplicates.length, 1);
  t.equal(d.duplicates[0], `${'a.'.repeat(5000)}k`);
  t.same(decodeJson('{"x":[{"a":1},{"a":1,"a":2}],"x":0}').duplicates, ['x[1].a', 'x']);
  t.same(decodeJson('{"a":1,\n"a":2}').duplicateKeys, [{ key: 'a', offset: 8 }]);
});

t.test(`YAML: ${MAX_YAML_DEPTH} nested collections compose, one more is go-yaml's error naming the limit and the line`, async (t) => {
  t.ok(decodeYaml(`x: ${'['.repeat(MAX_YAML_DEPTH - 1)}${']'.repeat(MAX_YAML_DEPTH - 1)}`), 'at the limit');
  t.equal(errorOf(() => decodeYaml(`x: ${'['.repeat(MAX_YAML_DEPTH)}`))?.message, `error converting YAML to JSON: yaml: exceeded max depth of ${MAX_YAML_DEPTH}`);
  t.equal(errorOf(() => decodeYaml(`a: 1\nx:\n${'- '.repeat(MAX_YAML_DEPTH)}1`))?.message, `error converting YAML to JSON: yaml: line 3: exceeded max depth of ${MAX_YAML_DEPTH}`);
  t.match(errorOf(() => decodeYaml('x: ' + '{a: '.repeat(1_000_000)))?.message, /exceeded max depth/, 'a megabyte of nesting stops early');
});

t.test(`YAML: more than ${MAX_YAML_TOKENS} tokens is a 413 before composing`, async (t) => {
  const e = errorOf(() => decodeYaml(`x: [${'1,'.repeat(MAX_YAML_TOKENS)}]`));
  t.type(e, StatusError);
  t.equal((e as StatusError).code, 413);
});

t.test('YAML: go-yaml alias limits', async (t) => {
  t.equal(allowedAliasRatio(1000), 0.99);
  t.equal(allowedAliasRatio(400_000), 0.99);
  t.equal(allowedAliasRatio(4_000_000), 0.1);
  t.ok(Math.abs(allowedAliasRatio(2_200_000) - 0.545) < 1e-9, 'linear in between');
  const laughs = ['a: &a [x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i < 6; i++) laughs.push(`${'abcdef'[i]}: &${'abcdef'[i]} [${Array(9).fill(`*${'abcdef'[i - 1]}`).join(', ')}]`);
  t.equal(errorOf(() => decodeYaml(laughs.join('\n')))?.message, 'error converting YAML to JSON: yaml: document contains excessive aliasing');
  t.same(decodeYaml(laughs.slice(0, 3).join('\n')).value, decodeYaml(laughs.slice(0, 3).join('\n')).value, 'a small expansion is fine');
  const fine = decodeYaml(laughs.slice(0, 2).join('\n')).value as Record<string, unknown>;
  t.equal((fine.b as unknown[]).length, 9);
  const many = decodeYaml(`a: &a x\nb: [${Array(5000).fill('*a').join(', ')}]`).value as { b: string[] };
  t.equal(many.b.length, 5000, 'thousands of aliases of a scalar are within the ratio');
  t.equal(errorOf(() => decodeYaml('a: *nope'))?.message, "error converting YAML to JSON: yaml: unknown anchor 'nope' referenced");
  t.equal(errorOf(() => decodeYaml('a: &a {b: *a}'))?.message, "error converting YAML to JSON: yaml: anchor 'a' value contains itself");
  const copies = decodeYaml('a: &a {k: [1]}\nb: *a').value as { a: { k: number[] }; b: { k: number[] } };
  t.not(copies.a, copies.b, 'each alias is its own copy, as go-yaml decodes it again');
});

t.test('YAML: merge keys as go-yaml applies them', async (t) => {
  t.same(decodeYaml('base: &b {p: 1, q: 2}\nx:\n  <<: *b\n  q: 3\n').value, { base: { p: 1, q: 2 }, x: { p: 1, q: 3 } }, 'keys after the merge win');
  t.same(decodeYaml('a: &a {p: 1}\nb: &b {p: 2, r: 2}\nx:\n  <<: [*a, *b]\n').value, { a: { p: 1 }, b: { p: 2, r: 2 }, x: { p: 1, r: 2 } }, 'earlier maps of a merged sequence win');
  t.equal(errorOf(() => decodeYaml('x:\n  <<: 1\n'))?.message, 'error converting YAML to JSON: yaml: map merge requires map or sequence of maps as the value');
  t.same(decodeYaml('x:\n  "<<": 1\n').value, { x: { '<<': 1 } }, 'a quoted << is a plain key');
});

t.test('YAML: values as upstream converts them to JSON', async (t) => {
  t.same(decodeYaml('t: 2001-12-14\nb: !!binary aGk=\nv: yes\ny: 1\n1: one\n').value, { t: '2001-12-14', b: 'hi', v: true, true: 1, '1': 'one' }, 'YAML 1.1: yes and y are true');
  t.same(decodeYaml('__proto__: {a: 1}').value, JSON.parse('{"__proto__":{"a":1}}'), '__proto__ is an own key');
  t.match(errorOf(() => decodeYaml('? [a]\n: b'))?.message, /unsupported map key/);
});

t.test('protobuf: map entries written without a value decode as the zero value', async (t) => {
  // the server registers each served kind's message at start; here only the one decoded
  registerProtobufKind('v1', 'ConfigMap', 'svc.io.api.core.v1', true);
  const cm = messageType('svc.io.api.core.v1.ConfigMap');
  const entry = (key: string): Uint8Array => protobuf.Writer.create().uint32(10).string(key).finish();
  const w = protobuf.Writer.create();
  w.uint32((cm.fields.binaryData!.id << 3) | 2).bytes(entry('bin'));
  w.uint32((cm.fields.data!.id << 3) | 2).bytes(entry('str'));
  const body = Buffer.concat([PROTOBUF_MAGIC, messageType(`${RUNTIME}.Unknown`).encode({ typeMeta: { apiVersion: 'v1', kind: 'ConfigMap' }, raw: w.finish() }).finish()]);
  t.same(decodeProtobufObject(body).object, { kind: 'ConfigMap', apiVersion: 'v1', data: { str: '' }, binaryData: { bin: '' } });
});
