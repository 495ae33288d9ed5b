import t from 'tap';
import { Quantity, QUANTITY_FORMAT_ERROR, QUANTITY_SUFFIX_ERROR } from '../../core/api/quantity.js';

t.test('parse and print in canonical form', async (t) => {
  const cases: [string, string][] = [
    ['0', '0'],
    ['0n', '0'],
    ['00', '0'],
    ['-0', '0'],
    ['1n', '1n'],
    ['1u', '1u'],
    ['1m', '1m'],
    ['100m', '100m'],
    ['1000m', '1'],
    ['1500m', '1500m'],
    ['0.5', '500m'],
    ['1.5', '1500m'],
    ['1.0', '1'],
    ['1.', '1.'], // upstream keeps these texts too: the value's digits are canonical
    ['.5', '500m'],
    ['1.5k', '1500'],
    ['0.1m', '100u'],
    ['0.0000000001', '1n'],
    ['-0.0000000001', '-1n'],
    ['1000', '1k'],
    ['1000000', '1M'],
    ['2000000000', '2G'],
    ['1k', '1k'],
    ['1E', '1E'],
    ['1000E', '1000E'],
    ['12', '12'],
    ['-1', '-1'],
    ['-1500m', '-1500m'],
    // as written when already canonical (upstream keeps the text it parsed)
    ['+1', '+1'],
    ['1Ki', '1Ki'],
    ['1Mi', '1Mi'],
    ['1024Ki', '1Mi'],
    ['8Ki', '8Ki'],
    ['1536Mi', '1536Mi'],
    ['1.5Gi', '1536Mi'],
    ['0.5Ki', '512'],
    ['1Ei', '1Ei'],
    ['1e3', '1e3'],
    ['1E3', '1E3'],
    ['10e3', '10e3'],
    ['1000e3', '1e6'],
    ['1e-3', '1e-3'],
    ['1e+3', '1e+3'],
    ['1.5e3', '1500'],
    ['1.G', '1.G'],
  ];
  for (const [input, want] of cases) t.equal(Quantity.parse(input).toString(), want, input);
});

t.test('refusals carry upstream messages', async (t) => {
  const cases: [string, string][] = [
    ['', QUANTITY_FORMAT_ERROR],
    ['abc', QUANTITY_FORMAT_ERROR],
    ['1.2.3', QUANTITY_FORMAT_ERROR],
    ['1Qi', QUANTITY_FORMAT_ERROR],
    ['1Gb', QUANTITY_FORMAT_ERROR],
    ['1 G', QUANTITY_FORMAT_ERROR],
    ['1ki', QUANTITY_SUFFIX_ERROR],
    ['1e', QUANTITY_SUFFIX_ERROR],
    ['1Mii', QUANTITY_SUFFIX_ERROR],
  ];
  for (const [input, msg] of cases) t.throws(() => Quantity.parse(input), { message: msg }, JSON.stringify(input));
});

t.test('compare, add and subtract', async (t) => {
  const p = Quantity.parse;
  t.equal(p('1Gi').cmp(p('1G')), 1);
  t.equal(p('1000m').cmp(p('1')), 0);
  t.equal(p('999m').cmp(p('1')), -1);
  t.equal(p('-1').cmp(p('0')), -1);
  t.equal(p('500m').add(p('500m')).toString(), '1');
  t.equal(p('1Ki').add(p('1Ki')).toString(), '2Ki');
  t.equal(Quantity.zero().add(p('1Ki')).toString(), '1Ki', 'a zero takes the format of what is added');
  t.equal(p('5').add(Quantity.fromInt(1)).toString(), '6');
  t.equal(p('5').sub(p('6')).toString(), '-1');
  t.equal(p('1.5').milliValue(), 1500n);
  t.equal(p('1n').milliValue(), 1n, 'milli values round up');
  t.equal(p('2k').value(), 2000n);
  t.ok(p('0').isZero());
  t.equal(p('-3').sign(), -1);
  t.equal(JSON.stringify({ q: p('1024Ki') }), '{"q":"1Mi"}');
});

t.test('binary values are capped at 2^63-1', async (t) => {
  t.equal(Quantity.parse('100000Ei').toString(), '9223372036854775807');
});
