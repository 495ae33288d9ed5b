/**
 * Boolean query parameters read as upstream's parameter codec reads them: absent is false, `0` and
 * `false` in any case are false, every other value (`f`, `no`, `off`, the empty string) is true; the
 * first value counts. `pretty` alone is Go's strconv.ParseBool, as upstream's handler reads it.
 * One table, checked through every function that reads such a parameter, so that authorization
 * (request info) and serving (list, write and delete options) never read one differently.
 */
import t from 'tap';
import { listOptionsFromQuery } from '../../core/request/list-options.js';
import { requestInfoFor } from '../../core/request/request-info.js';
import { queryBool } from '../../core/request/query-params.js';
import { deleteOptionsFrom, writeOptionsFromQuery } from '../../core/request/write-options.js';
import { isPretty } from '../../core/server/endpoints/resource.js';

// value as sent (undefined: absent) -> upstream's reading
const codec: [string | undefined, boolean][] = [
  [undefined, false],
  ['true', true],
  ['1', true],
  ['TRUE', true],
  ['f', true],
  ['F', true],
  ['no', true],
  ['off', true],
  ['', true],
  ['00', true],
  ['tRuE', true],
  ['false', false],
  ['False', false],
  ['FALSE', false],
  ['fAlSe', false],
  ['0', false],
];

const q = (name: string, v: string | undefined, extra = ''): URLSearchParams => new URLSearchParams((v === undefined ? '' : `${name}=${encodeURIComponent(v)}`) + extra);

t.test('the codec rule: only 0 and false (any case) are false', async (t) => {
  for (const [v, want] of codec) t.equal(queryBool(v), want, JSON.stringify(v));
  t.equal(queryBool(new URLSearchParams('watch=false&watch=true').get('watch')), false, 'the first value counts');
});

t.test('every boolean parameter is read by the same rule in authorization and serving', async (t) => {
  for (const [v, want] of codec) {
    const label = JSON.stringify(v);
    t.equal(requestInfoFor('GET', '/api/v1/namespaces/a/configmaps', q('watch', v)).verb, want ? 'watch' : 'list', `request info: watch=${label}`);
    t.equal(listOptionsFromQuery(q('watch', v)).watch, want, `list options: watch=${label}`);
    t.equal(listOptionsFromQuery(q('allowWatchBookmarks', v)).allowWatchBookmarks, want, `allowWatchBookmarks=${label}`);
    t.equal(listOptionsFromQuery(q('sendInitialEvents', v)).sendInitialEvents, v === undefined ? undefined : want, `sendInitialEvents=${label}`);
    t.equal(writeOptionsFromQuery(q('force', v, '&fieldManager=m'), 'PatchOptions', true).force, v === undefined ? undefined : want, `force=${label}`);
    t.equal(deleteOptionsFrom(undefined, q('orphanDependents', v)).orphanDependents, v === undefined ? undefined : want, `orphanDependents=${label}`);
    t.equal(deleteOptionsFrom(undefined, q('ignoreStoreReadErrorWithClusterBreakingPotential', v)).ignoreStoreReadErrorWithClusterBreakingPotential ?? false, want, `ignoreStoreReadErrorWithClusterBreakingPotential=${label}`);
  }
});

t.test('pretty is Go ParseBool (1 t T TRUE true True), and unset or empty leaves it to the user agent', async (t) => {
  const rows: [string | undefined, string | undefined, boolean][] = [
    ['true', undefined, true],
    ['1', undefined, true],
    ['t', undefined, true],
    ['T', undefined, true],
    ['TRUE', undefined, true],
    ['True', undefined, true],
    ['tRuE', undefined, false],
    ['yes', undefined, false],
    ['f', 'curl/8.0', false],
    ['0', 'curl/8.0', false],
    ['', 'curl/8.0', true],
    [undefined, 'curl/8.0', true],
    [undefined, 'kubectl/v1.32', false],
  ];
  for (const [v, ua, want] of rows) t.equal(isPretty(q('pretty', v), ua), want, `pretty=${JSON.stringify(v)} user agent ${ua}`);
});
