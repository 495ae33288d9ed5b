/**
 * Which registry tasks the main thread runs itself whatever the pool (lightTask): small single-object
 * writes; applies, large bodies, store lists and collection deletes go to the pool.
 */
import t from 'tap';
import { LIGHT_BODY_BYTES, lightTask } from '../../core/registry/client.js';
import type { ApiTask, TaskVerb } from '../../core/registry/task.js';

const task = (verb: TaskVerb, contentType: string, bodyBytes: number | undefined): ApiTask => ({
  verb,
  resource: '/v1/configmaps',
  subresource: '',
  namespace: 'a',
  name: verb === 'create' ? '' : 'x',
  query: '',
  ...(bodyBytes === undefined ? {} : { body: new Uint8Array(bodyBytes) }),
  contentType,
  form: { mediaType: 'application/json', contentType: 'application/json', pretty: false },
  user: { username: 'u', groups: [] },
  userAgent: 'test',
});

const cases: [string, ApiTask, boolean][] = [
  ['a small create is light', task('create', 'application/json', 900), true],
  ['a small update (a lease renewal) is light', task('update', 'application/json', 400), true],
  ['a delete without a body is light', task('delete', 'application/json', undefined), true],
  ['a merge patch is light', task('patch', 'application/merge-patch+json', 100), true],
  ['a strategic merge patch is light', task('patch', 'application/strategic-merge-patch+json', 100), true],
  ['a body of exactly the limit is light', task('create', 'application/json', LIGHT_BODY_BYTES), true],
  ['a body over the limit goes to the pool', task('create', 'application/json', LIGHT_BODY_BYTES + 1), false],
  ['an apply goes to the pool, however small', task('patch', 'application/apply-patch+yaml', 100), false],
  ['a CBOR apply goes to the pool', task('patch', 'application/apply-patch+cbor', 100), false],
  ['an apply with parameters goes to the pool', task('patch', 'application/apply-patch+yaml; charset=utf-8', 100), false],
  ['a list read from the store goes to the pool', task('list', 'application/json', undefined), false],
  ['a collection delete goes to the pool', task('deletecollection', 'application/json', undefined), false],
];

for (const [rule, tk, light] of cases) t.equal(lightTask(tk), light, rule);
