import t from 'tap';
import { fieldErrorString } from '../../core/api/field-errors.js';
import {
  base64DecodedLength,
  byteLength,
  goQuote,
  goStringSlice,
  isConfigMapKey,
  isDNS1035Label,
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  isValidLabelValue,
  isValidPathSegmentName,
  isValidPortName,
  jsonEqual,
  nameIsDNSLabel,
  nameIsDNSSubdomain,
  nameIsPathSegment,
  nameValidatorFor,
  regexError,
  validateAnnotations,
  validateImmutableField,
  validateLabels,
} from '../../core/api/validation.js';

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MSG =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const NAME_PART_MSG =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const QUALIFIED_MSG =
  "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const CONFIG_KEY_MSG =
  "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

type Row = [input: string, expected: string[]];

function table(name: string, fn: (s: string) => string[], rows: Row[]): void {
  t.test(name, async (t) => {
    for (const [input, expected] of rows) t.same(fn(input), expected, JSON.stringify(input.length > 40 ? `${input.slice(0, 40)}…` : input));
  });
}

table('isDNS1123Subdomain accepts lowercase dotted names up to 253 characters', isDNS1123Subdomain, [
  ['a', []],
  ['example.com', []],
  ['a-b.c-d', []],
  ['1.2.3', []],
  ['a'.repeat(253), []],
  ['Foo', [SUBDOMAIN_MSG]],
  ['-a', [SUBDOMAIN_MSG]],
  ['a-', [SUBDOMAIN_MSG]],
  ['a..b', [SUBDOMAIN_MSG]],
  ['a_b', [SUBDOMAIN_MSG]],
  ['', [SUBDOMAIN_MSG]],
  ['a'.repeat(254), ['must be no more than 253 characters']],
  ['A'.repeat(254), ['must be no more than 253 characters', SUBDOMAIN_MSG]],
]);

table('isDNS1123Label rejects dots with its own message and names over 63 characters', isDNS1123Label, [
  ['my-name', []],
  ['123-abc', []],
  ['a'.repeat(63), []],
  ['a.b', ['must not contain dots']],
  ['A', [LABEL_MSG]],
  ['a_b', [LABEL_MSG]],
  ['', [LABEL_MSG]],
  ['a'.repeat(64), ['must be no more than 63 characters']],
]);

table('isDNS1035Label requires a leading letter', isDNS1035Label, [
  ['abc-123', []],
  ['1abc', [DNS1035_MSG]],
  ['a'.repeat(64), ['must be no more than 63 characters']],
]);

table('isQualifiedName checks the optional prefix and the name part', isQualifiedName, [
  ['MyName', []],
  ['my.name', []],
  ['example.com/MyName', []],
  ['svc.io/metadata.name', []],
  ['/a', ['prefix part must be non-empty']],
  ['a/', ['name part must be non-empty', NAME_PART_MSG]],
  ['', ['name part must be non-empty', NAME_PART_MSG]],
  ['Example.com/a', [`prefix part ${SUBDOMAIN_MSG}`]],
  ['a/b/c', [QUALIFIED_MSG]],
  ['-a', [NAME_PART_MSG]],
  ['a'.repeat(64), ['name part must be no more than 63 characters']],
]);

table('isValidLabelValue allows the empty string and 63 characters', isValidLabelValue, [
  ['', []],
  ['my_value', []],
  ['a'.repeat(63), []],
  ['a b', [LABEL_VALUE_MSG]],
  ['a'.repeat(64), ['must be no more than 63 characters']],
]);

table('isConfigMapKey allows dots, dashes and underscores but not . or .. prefixes', isConfigMapKey, [
  ['key.name', []],
  ['KEY_NAME', []],
  ['.dockercfg', []],
  ['a/b', [CONFIG_KEY_MSG]],
  ['', [CONFIG_KEY_MSG]],
  ['.', ["must not be '.'"]],
  ['..', ["must not be '..'"]],
  ['..a', ["must not start with '..'"]],
  ['a'.repeat(254), ['must be no more than 253 characters']],
]);

table('isValidPathSegmentName rejects . .. / and %', isValidPathSegmentName, [
  ['anything:goes', []],
  ['.', ["may not be '.'"]],
  ['..', ["may not be '..'"]],
  ['a/b%c', ["may not contain '/'", "may not contain '%'"]],
]);

table('isValidPortName follows the IANA service name rules', isValidPortName, [
  ['http', []],
  ['h2c-1', []],
  ['1234', ['must contain at least one letter (a-z)']],
  ['a--b', ['must not contain consecutive hyphens']],
  ['-ab', ['must not begin or end with a hyphen']],
  ['Http', ['must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)']],
  ['a'.repeat(16), ['must be no more than 15 characters']],
]);

t.test('name validators mask a trailing dash of a generateName prefix', async (t) => {
  t.same(nameIsDNSSubdomain('web-', true), []);
  t.same(nameIsDNSSubdomain('web-', false), [SUBDOMAIN_MSG]);
  t.same(nameIsDNSLabel('a.b-', true), ['must not contain dots']);
  t.same(nameIsPathSegment('.', true), []);
  t.same(nameIsPathSegment('.', false), ["may not be '.'"]);
  t.equal(nameValidatorFor('dns1123-label'), nameIsDNSLabel);
  t.equal(nameValidatorFor(undefined), nameIsDNSSubdomain);
  t.equal(nameValidatorFor('path-segment'), nameIsPathSegment);
});

t.test('regexError joins examples the way upstream does', async (t) => {
  t.equal(regexError('msg', 'x'), "msg (regex used for validation is 'x')");
  t.equal(regexError('msg', 'x', 'a', 'b'), "msg (e.g. 'a',  or 'b', regex used for validation is 'x')");
});

t.test('validateLabels reports keys and values at the labels path', async (t) => {
  t.same(validateLabels({ 'app.svc.io/name': 'web', empty: '' }, 'metadata.labels'), []);
  const errs = validateLabels({ 'bad key': 'bad value!' }, 'metadata.labels').map(fieldErrorString);
  t.same(errs, [`metadata.labels: Invalid value: "bad key": ${NAME_PART_MSG}`, `metadata.labels: Invalid value: "bad value!": ${LABEL_VALUE_MSG}`]);
});

t.test('validateAnnotations checks lowercased keys and the 256 KiB total', async (t) => {
  t.same(validateAnnotations({ 'Example.COM/Key': 'any value at all' }, 'metadata.annotations'), []);
  const bad = validateAnnotations({ 'a b': 'x' }, 'metadata.annotations').map(fieldErrorString);
  t.same(bad, [`metadata.annotations: Invalid value: "a b": ${NAME_PART_MSG}`]);
  const big = validateAnnotations({ a: 'x'.repeat(256 * 1024) }, 'metadata.annotations').map(fieldErrorString);
  t.same(big, ['metadata.annotations: Too long: may not be more than 262144 bytes']);
  t.same(validateAnnotations({ a: 'x'.repeat(256 * 1024 - 1) }, 'metadata.annotations'), []);
});

t.test('lengths are counted in UTF-8 bytes as Go does', async (t) => {
  t.equal(byteLength('abc'), 3);
  t.equal(byteLength('é'), 2);
  t.equal(byteLength('€'), 3);
  t.equal(byteLength('😀'), 4);
  t.same(isValidLabelValue('é'.repeat(32)).includes('must be no more than 63 characters'), true);
  t.equal(base64DecodedLength('QUJD'), 3);
  t.equal(base64DecodedLength('QUI='), 2);
  t.equal(base64DecodedLength('QQ=='), 1);
  t.equal(base64DecodedLength(''), 0);
});

t.test('validateImmutableField reports the new value; jsonEqual ignores key order', async (t) => {
  t.same(validateImmutableField({ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }, 'x'), []);
  t.same(validateImmutableField('new', 'old', 'spec.x').map(fieldErrorString), ['spec.x: Invalid value: "new": field is immutable']);
  t.equal(jsonEqual({ a: undefined }, {}), true);
  t.equal(jsonEqual([1], [1, 2]), false);
  t.equal(jsonEqual(null, {}), false);
});

t.test('goQuote and goStringSlice render values like Go %q and %#v', async (t) => {
  t.equal(goQuote('a"b\\c\n\x01'), '"a\\"b\\\\c\\n\\x01"');
  t.equal(goQuote('é'), '"é"');
  t.equal(goStringSlice(['a', 'b']), '[]string{"a", "b"}');
  t.equal(goStringSlice([]), '[]string{}');
  t.equal(goStringSlice(null), '[]string(nil)');
});
