import t from 'tap';
import { fieldErrorString } from '../../core/api/field-errors.js';
import {
  SelectorParseError,
  fieldSelectorFromSet,
  labelSelectorFromObject,
  parseFieldSelector,
  parseLabelSelector,
  validateLabelSelector,
} from '../../core/api/selectors.js';

const NAME_PART_MSG =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const QUALIFIED_MSG =
  "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

t.test('label selector grammar: parse and canonical string', async (t) => {
  const rows: [string, string][] = [
    ['', ''],
    ['a', 'a'],
    ['!a', '!a'],
    ['a=b', 'a=b'],
    ['a==b', 'a==b'],
    ['a!=b', 'a!=b'],
    ['a>1', 'a>1'],
    ['a<5', 'a<5'],
    ['a in (c,b,b)', 'a in (b,c)'],
    ['a notin (x)', 'a notin (x)'],
    ['a=', 'a='],
    ['a in ()', 'a in ()'],
    ['a in (,b)', 'a in (,b)'],
    ['  z = 1 ,  a  ', 'a,z=1'],
    ['b,a', 'a,b'],
    ['in=notin', 'in=notin'],
    ['a in (in,notin)', 'a in (in,notin)'],
    ['example.com/a=B_1', 'example.com/a=B_1'],
    ['a\tin\n(b)', 'a in (b)'],
  ];
  for (const [input, want] of rows) t.equal(parseLabelSelector(input).toString(), want, JSON.stringify(input));
  t.equal(parseLabelSelector('').empty, true);
  t.equal(parseLabelSelector('a').empty, false);
  t.same(parseLabelSelector('x in (b,a),!y').requirements, [
    { key: 'x', operator: 'in', values: ['a', 'b'] },
    { key: 'y', operator: '!', values: [] },
  ]);
});

t.test('label selector parse errors carry upstream messages', async (t) => {
  const rows: [string, string][] = [
    [',a', "found ',', expected: !, identifier, or 'end of string'"],
    ['a,', "found '', expected: identifier after ','"],
    ['a,,b', "found ',', expected: identifier after ','"],
    ['a=b=c', "found '=', expected: ',' or 'end of string'"],
    ['a b', "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"],
    ['a!b', "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"],
    ['!', "unable to parse requirement: found '', expected: identifier"],
    ['!=a', "found '!=', expected: !, identifier, or 'end of string'"],
    ['!!a', "unable to parse requirement: found '!', expected: identifier"],
    ['a<-1', `unable to parse requirement: values[0][a]: Invalid value: "-1": ${LABEL_VALUE_MSG}`],
    ['a in b', "unable to parse requirement: found 'b' expected: '('"],
    ['a in (b', "unable to parse requirement: found '', expected: ',' or ')'"],
    ['a in (b c)', "unable to parse requirement: found 'c', expected: ',' or ')'"],
    ['a in (=)', "unable to parse requirement: found '=', expected: ',', ')' or identifier"],
    ['a in (b,=)', "unable to parse requirement: found '=', expected: ',', or identifier"],
    ['a=(', "unable to parse requirement: found '(', expected: identifier"],
    ['a/b/c', `unable to parse requirement: <nil>: Invalid value: "a/b/c": ${QUALIFIED_MSG}`],
    ['-a=b', `unable to parse requirement: <nil>: Invalid value: "-a": ${NAME_PART_MSG}`],
    ['a=b@', `unable to parse requirement: values[0][a]: Invalid value: "b@": ${LABEL_VALUE_MSG}`],
    ['a in (x y)', "unable to parse requirement: found 'y', expected: ',' or ')'"],
    [
      'a in (-x,y_)',
      `unable to parse requirement: [values[0][a]: Invalid value: "-x": ${LABEL_VALUE_MSG}, values[1][a]: Invalid value: "y_": ${LABEL_VALUE_MSG}]`,
    ],
    ['a>x', `unable to parse requirement: values[0]: Invalid value: "x": for 'Gt', 'Lt' operators, the value must be an integer`],
    ['a<99999999999999999999', `unable to parse requirement: values[0]: Invalid value: "99999999999999999999": for 'Gt', 'Lt' operators, the value must be an integer`],
  ];
  for (const [input, want] of rows) {
    t.throws(() => parseLabelSelector(input), new SelectorParseError(want), JSON.stringify(input));
  }
  t.throws(() => parseLabelSelector('a b'), SelectorParseError);
});

t.test('label selector matching for every operator', async (t) => {
  const labels = { app: 'web', tier: 'front', n: '10', empty: '' };
  const rows: [string, Record<string, string> | undefined, boolean][] = [
    ['', labels, true],
    ['', undefined, true],
    ['app=web', labels, true],
    ['app==web', labels, true],
    ['app=api', labels, false],
    ['missing=x', labels, false],
    ['app!=api', labels, true],
    ['app!=web', labels, false],
    ['missing!=x', labels, true],
    ['app in (api,web)', labels, true],
    ['app in (api)', labels, false],
    ['missing in (x)', labels, false],
    ['app notin (api)', labels, true],
    ['app notin (web)', labels, false],
    ['missing notin (x)', labels, true],
    ['app', labels, true],
    ['missing', labels, false],
    ['!missing', labels, true],
    ['!app', labels, false],
    ['n>9', labels, true],
    ['n>10', labels, false],
    ['n<11', labels, true],
    ['app>1', labels, false],
    ['missing<5', labels, false],
    ['empty=', labels, true],
    ['empty', labels, true],
    ['app=web,tier=front', labels, true],
    ['app=web,tier=back', labels, false],
    ['app', undefined, false],
  ];
  for (const [sel, ls, want] of rows) t.equal(parseLabelSelector(sel).matches(ls), want, `${sel} on ${JSON.stringify(ls)}`);
});

t.test('label selector exactMatch: =, == and single-value in pin a label', async (t) => {
  t.equal(parseLabelSelector('a=1,b in (2),c!=3').exactMatch('a'), '1');
  t.equal(parseLabelSelector('a=1,b in (2),c!=3').exactMatch('b'), '2');
  t.equal(parseLabelSelector('a=1,b in (2),c!=3').exactMatch('c'), undefined);
  t.equal(parseLabelSelector('b in (2,3)').exactMatch('b'), undefined);
  t.equal(parseLabelSelector('a==x').exactMatch('a'), 'x');
  t.equal(parseLabelSelector('').exactMatch('a'), undefined);
});

t.test('metav1.LabelSelector objects: nil matches nothing, empty everything', async (t) => {
  const nothing = labelSelectorFromObject(undefined);
  t.equal(nothing.matches({}), false);
  t.equal(nothing.empty, false);
  const all = labelSelectorFromObject({});
  t.equal(all.matches({ a: 'b' }), true);
  t.equal(all.empty, true);
  const sel = labelSelectorFromObject({
    matchLabels: { 'rbac.authorization.svc.io/aggregate-to-view': 'true' },
    matchExpressions: [
      { key: 'tier', operator: 'In', values: ['a', 'b'] },
      { key: 'x', operator: 'DoesNotExist' },
      { key: 'y', operator: 'Exists' },
      { key: 'z', operator: 'NotIn', values: ['q'] },
    ],
  });
  t.equal(sel.toString(), 'rbac.authorization.svc.io/aggregate-to-view=true,tier in (a,b),!x,y,z notin (q)');
  t.equal(sel.matches({ 'rbac.authorization.svc.io/aggregate-to-view': 'true', tier: 'b', y: '' }), true);
  t.equal(sel.matches({ 'rbac.authorization.svc.io/aggregate-to-view': 'true', tier: 'b', y: '', x: '1' }), false);
});

t.test('metav1.LabelSelector conversion errors', async (t) => {
  t.throws(() => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] }), new SelectorParseError('"Gt" is not a valid label selector operator'));
  t.throws(
    () => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'In' }] }),
    new SelectorParseError("values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"),
  );
  t.throws(
    () => labelSelectorFromObject({ matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }),
    new SelectorParseError('values: Invalid value: []string{"x"}: values set must be empty for exists and does not exist'),
  );
  t.throws(() => labelSelectorFromObject({ matchLabels: { 'a b': 'c' } }), new SelectorParseError(`key: Invalid value: "a b": ${NAME_PART_MSG}`));
  t.throws(() => labelSelectorFromObject({ matchLabels: { a: 'c d' } }), new SelectorParseError(`values[0][a]: Invalid value: "c d": ${LABEL_VALUE_MSG}`));
});

t.test('validateLabelSelector field errors', async (t) => {
  const errs = validateLabelSelector(
    {
      matchLabels: { 'a b': 'x' },
      matchExpressions: [
        { key: 'k', operator: 'In', values: [] },
        { key: 'k', operator: 'Exists', values: ['v'] },
        { key: '-k', operator: 'Nope', values: ['bad value'] },
      ],
    },
    'selector',
  ).map(fieldErrorString);
  t.same(errs, [
    `selector.matchLabels: Invalid value: "a b": ${NAME_PART_MSG}`,
    "selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
    "selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
    'selector.matchExpressions[2].operator: Invalid value: "Nope": not a valid selector operator',
    `selector.matchExpressions[2].key: Invalid value: "-k": ${NAME_PART_MSG}`,
    `selector.matchExpressions[2].values[0]: Invalid value: "bad value": ${LABEL_VALUE_MSG}`,
  ]);
  t.same(validateLabelSelector({ matchExpressions: [{ key: 'k', operator: 'Nope', values: ['bad value'] }] }, 's', {
    allowUnknownOperatorInRequirement: true,
    allowInvalidLabelValueInSelector: true,
  }), []);
  t.same(validateLabelSelector(undefined, 's'), []);
});

t.test('field selector grammar: =, ==, != and escapes', async (t) => {
  const rows: [string, string, { field: string; operator: '=' | '!='; value: string }[]][] = [
    ['', '', []],
    ['metadata.name=a', 'metadata.name=a', [{ field: 'metadata.name', operator: '=', value: 'a' }]],
    ['a==b', 'a=b', [{ field: 'a', operator: '=', value: 'b' }]],
    ['b=1,a!=2', 'a!=2,b=1', [
      { field: 'a', operator: '!=', value: '2' },
      { field: 'b', operator: '=', value: '1' },
    ]],
    ['a=b\\,c\\=d\\\\e', 'a=b\\,c\\=d\\\\e', [{ field: 'a', operator: '=', value: 'b,c=d\\e' }]],
    ['a=', 'a=', [{ field: 'a', operator: '=', value: '' }]],
    ['a=b,,c=d', 'a=b,c=d', [
      { field: 'a', operator: '=', value: 'b' },
      { field: 'c', operator: '=', value: 'd' },
    ]],
    ['=x', '=x', [{ field: '', operator: '=', value: 'x' }]],
  ];
  for (const [input, str, reqs] of rows) {
    const sel = parseFieldSelector(input);
    t.equal(sel.toString(), str, JSON.stringify(input));
    t.same(sel.requirements, reqs, JSON.stringify(input));
  }
  t.equal(parseFieldSelector('').empty, true);
});

t.test('field selector parse errors carry upstream messages', async (t) => {
  const rows: [string, string][] = [
    ['a', "invalid selector: 'a'; can't understand 'a'"],
    ['x=1,b', "invalid selector: 'x=1,b'; can't understand 'b'"],
    ['a=b=c', 'invalid field selector: unescaped character in value: 61'],
    ['a==b,c', "invalid selector: 'a==b,c'; can't understand 'c'"],
    ['a=b\\x', 'invalid field selector: invalid escape sequence: \\x'],
    ['a=b\\', 'invalid field selector: invalid escape sequence: \\'],
  ];
  for (const [input, want] of rows) t.throws(() => parseFieldSelector(input), new SelectorParseError(want), JSON.stringify(input));
});

t.test('field selector matching and exact-match fast path', async (t) => {
  const fields = { 'metadata.name': 'a', 'metadata.namespace': 'ns', 'status.phase': 'Active' };
  t.equal(parseFieldSelector('metadata.name=a').matches(fields), true);
  t.equal(parseFieldSelector('metadata.name=b').matches(fields), false);
  t.equal(parseFieldSelector('metadata.name!=b,status.phase=Active').matches(fields), true);
  t.equal(parseFieldSelector('status.phase!=Active').matches(fields), false);
  t.equal(parseFieldSelector('missing=').matches(fields), true, 'an absent field equals the empty string');
  t.equal(parseFieldSelector('missing!=x').matches(fields), true);
  t.equal(parseFieldSelector('').matches(fields), true);
  const sel = parseFieldSelector('metadata.namespace!=x,metadata.name==a');
  t.equal(sel.exactMatch('metadata.name'), 'a');
  t.equal(sel.exactMatch('metadata.namespace'), undefined);
  t.equal(fieldSelectorFromSet({ 'metadata.name': 'a,b' }).toString(), 'metadata.name=a\\,b');
});
