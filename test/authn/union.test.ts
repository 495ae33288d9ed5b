import t from 'tap';
import { AuthenticationError, type Authenticator, union } from '../../core/authn/authenticator.js';
import type { UserInfo } from '../../core/api/types.js';

const user = (username: string, groups: string[] = []): UserInfo => ({ username, groups });
const recognises = (name: string, u: UserInfo, async = false): Authenticator => ({ name, authenticate: () => (async ? Promise.resolve(u) : u) });
const ignores = (name: string, async = false): Authenticator => ({ name, authenticate: () => (async ? Promise.resolve(null) : null) });
const rejects = (name: string, async = false): Authenticator => ({
  name,
  authenticate: () => {
    if (async) return Promise.reject(new AuthenticationError(`${name} rejected`));
    throw new AuthenticationError(`${name} rejected`);
  },
});
const req = { headers: {}, peer: undefined };

// [rule, authenticators, expected user name or null or the error thrown]
const rows: [string, Authenticator[], string | null | Error][] = [
  ['no authenticators: no user', [], null],
  ['none recognises the request: no user (left to anonymous)', [ignores('a'), ignores('b', true)], null],
  ['the first that recognises decides', [recognises('a', user('alice')), recognises('b', user('bob'))], 'alice'],
  ['methods that see no credential of theirs are skipped', [ignores('a'), recognises('b', user('bob'))], 'bob'],
  ['a later method may still recognise a request an earlier one rejected', [rejects('a'), recognises('b', user('bob'))], 'bob'],
  ['a rejection with no success is an error, never anonymous', [rejects('a'), ignores('b')], new AuthenticationError('a rejected')],
  ['the first rejection is reported', [rejects('a'), rejects('b')], new AuthenticationError('a rejected')],
  ['asynchronous methods are awaited in order', [ignores('a', true), recognises('b', user('bob'), true), recognises('c', user('carl'))], 'bob'],
  ['an asynchronous rejection falls through to the next method', [rejects('a', true), recognises('b', user('bob'))], 'bob'],
  ['an asynchronous rejection with no success is an error', [rejects('a', true)], new AuthenticationError('a rejected')],
];

t.test('authenticator union: order, fall-through and rejections', async (t) => {
  for (const [rule, list, want] of rows) {
    const run = async (): Promise<UserInfo | null> => union(list).authenticate(req);
    if (want instanceof Error) await t.rejects(run, { message: want.message }, rule);
    else {
      const got = await run();
      t.equal(got?.username ?? null, want, rule);
    }
  }
});

t.test('authenticator union: every authenticated user is in system:authenticated, once; anonymous is not', async (t) => {
  const a = await union([recognises('a', user('alice', ['dev']))]).authenticate(req);
  t.same(a?.groups, ['dev', 'system:authenticated']);
  const b = await union([recognises('a', user('bob', ['system:authenticated']))]).authenticate(req);
  t.same(b?.groups, ['system:authenticated']);
  const anon = await union([recognises('a', user('system:anonymous', ['system:unauthenticated']))]).authenticate(req);
  t.same(anon?.groups, ['system:unauthenticated']);
});

t.test('authenticator union stays synchronous while every method answers at once', async (t) => {
  const r = union([ignores('a'), recognises('b', user('bob'))]).authenticate(req);
  t.notOk(r instanceof Promise, 'a plain value, not a promise');
});
