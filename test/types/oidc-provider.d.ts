/** The little of oidc-provider's API the tests use (the package ships no types). */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  export default class Provider {
    constructor(issuer: string, configuration: unknown);
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;
  }
}
