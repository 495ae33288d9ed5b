/**
 * Authentication: the authenticators from the flags (their configuration errors stop the start before
 * anything is opened), the stage that runs them, the reviews that ask them (TokenReview,
 * SelfSubjectReview), service account tokens (TokenRequest) and the issuer's discovery documents.
 */
import { issuerDiscoveryRoutes } from '../../authn/issuer-discovery.js';
import { buildAuthenticator } from '../../authn/factory.js';
import { selfSubjectReview, tokenReview } from '../../authn/reviews.js';
import { resolveServiceAccountKeys } from '../../authn/service-account-keys.js';
import { tokenRequestHandler } from '../../authn/token-request.js';
import { auditFailedAuthentication } from '../../audit/record.js';
import { servedTypesFor } from '../../registry/enablement.js';
import type { Lister } from '../../registry/lister.js';
import { selfSubjectReviews } from '../../registry/authentication/selfsubjectreviews.js';
import { tokenReviews } from '../../registry/authentication/tokenreviews.js';
import type { NonResourceRoute, VirtualHandler } from '../../request/routes.js';
import { join } from 'node:path';
import { virtualId } from '../endpoints/virtual.js';
import type { FeatureConfig, ServerFeature } from '../feature.js';
import { withAuthentication } from '../stages/authenticate.js';

export function authenticationFeature(): ServerFeature {
  let issuerRoutes = new Map<string, NonResourceRoute>();
  return {
    name: 'authentication',
    configure(c) {
      const o = c.opts;
      // an unreadable key file is a start error naming it
      const saKeys = resolveServiceAccountKeys(o, { keyFile: o.tlsPrivateKeyFile || join(o.dataDir, 'apiserver.key'), generated: !o.tlsCertFile, dataDir: o.dataDir });
      c.shared.serviceAccountKeys = saKeys;
      c.shared.authenticator = buildAuthenticator(o, {
        clientCAs: c.clientCAs,
        featureGates: c.featureGates,
        authenticationConfigStatus: c.authenticationConfigStatus,
        onStop: (fn) => c.onStop(fn),
        apiAudiences: saKeys.apiAudiences,
        serviceAccountKeys: saKeys.verifiers,
        serviceAccounts: lazyCoreGetter(c, 'serviceaccounts'),
        secrets: lazyCoreGetter(c, 'secrets'),
      });
    },
    async start(c) {
      const o = c.opts;
      if (o.serviceAccountIssuers.length) {
        issuerRoutes = await issuerDiscoveryRoutes(o.serviceAccountIssuers[0]!, o.serviceAccountJwksUri, () => new URL(c.url()).host, c.shared.serviceAccountKeys!.verifiers);
      }
    },
    stages(c) {
      const auditor = c.shared.auditor;
      return {
        authentication: withAuthentication(c.shared.authenticator!, c.opts.anonymousAuth, { metrics: c.metrics, ...(auditor ? { onUnauthorized: (s) => auditFailedAuthentication(auditor, s) } : {}) }),
      };
    },
    virtualHandlers(c) {
      const o = c.opts;
      const saKeys = c.shared.serviceAccountKeys!;
      const handlers: [string, VirtualHandler][] = [
        [virtualId(selfSubjectReviews), selfSubjectReview],
        [virtualId(tokenReviews), tokenReview(c.shared.authenticator!, saKeys.apiAudiences)],
      ];
      const core = (plural: string) => c.types.all().find((t) => t.group === '' && t.plural === plural);
      const saType = core('serviceaccounts');
      const secretType = core('secrets');
      if (saType && saKeys.signer && o.serviceAccountIssuers.length) {
        handlers.push([
          virtualId(saType, 'token'),
          tokenRequestHandler({
            signer: saKeys.signer,
            issuer: o.serviceAccountIssuers[0]!,
            apiAudiences: saKeys.apiAudiences,
            maxExpirationSeconds: Math.floor(o.serviceAccountMaxTokenExpirationMs / 1000),
            serviceAccounts: c.lister().for(saType),
            secrets: secretType && c.lister().for(secretType),
          }),
        ]);
      }
      return handlers;
    },
    routes: () => issuerRoutes,
  };
}

/**
 * The token methods read Secrets and ServiceAccounts through listers, which exist once the watch
 * cache does; the authenticator is built before that and reaches them when a request asks.
 */
function lazyCoreGetter(c: FeatureConfig, plural: string): Pick<Lister, 'get'> | undefined {
  const rt = servedTypesFor(c.featureGates, c.opts.runtimeConfig).find((t) => t.group === '' && t.plural === plural);
  return rt && { get: (ns: string, name: string) => c.listers()?.for(rt).get(ns, name) };
}
