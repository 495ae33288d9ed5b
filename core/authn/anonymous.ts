/** Anonymous access: a request with no credential is system:anonymous in system:unauthenticated. */
import type { UserInfo } from '../api/types.js';
import { ANONYMOUS_USER, UNAUTHENTICATED } from './authenticator.js';

export const anonymousUser: UserInfo = Object.freeze({ username: ANONYMOUS_USER, groups: [UNAUTHENTICATED] }) as UserInfo;
