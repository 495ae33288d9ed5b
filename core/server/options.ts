/**
 * Server options and their command-line flags, spelled as upstream spells them (`--secure-port`,
 * `--client-ca-file`, `--authorization-mode`, ...) plus our own (`--data-dir`, `--workers`,
 * `--storage-backend`, `--watch-cache-size`). One table drives parsing, defaults and --help.
 */
import { type AuditOptions, auditFlagError, auditFlags } from '../audit/options.js';
import { certificateFlagError, certificateFlags, type CertificateSigningOptions } from '../certificates/options.js';
import type { AuthenticationOptions } from '../authn/factory.js';
import { type AuthorizationOptions, authorizationFlagError, authorizationModes } from '../authz/factory.js';
import { ControllersFlagError, selectControllers } from '../controllers/manager.js';
import { type StorageBackend, type StorageFlags, storageFlagError } from '../storage/factory.js';
import { MetricsFlagError, showHiddenMetricsFor } from '../metrics/registry.js';
import { type LoggingFormat, loggingFormats } from '../log/logger.js';
import type { SweepClock } from './endpoints/watch.js';
import type { ControllerClock } from '../controllers/csr-cleaner.js';

/** What an acceptor process is told by the primary that started it. */
export interface AcceptorRole {
  /** 0-based; the acceptor with index 0 runs the store's housekeeping (compaction, event TTL). */
  index: number;
  /** How many acceptors serve together. */
  count: number;
}

export interface ServerOptions extends AuthenticationOptions, AuthorizationOptions, AuditOptions, StorageFlags, CertificateSigningOptions {
  securePort: number;
  /** Port of the gRPC API (svc.api.v1.Resources); 0: not served. */
  grpcPort: number;
  /** Calls one gRPC connection may have open at once. */
  grpcMaxStreamsPerConnection: number;
  bindAddress: string;
  dataDir: string;
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  clientCAFile: string;
  tokenAuthFile: string;
  anonymousAuth: boolean;
  authorizationMode: string[];
  workers: number;
  /** --acceptors: processes that accept connections and serve (0 or 1: one process). */
  acceptors: number;
  /** No flag: set in an acceptor process by the primary that started it (core/server/acceptors.ts). */
  acceptor?: AcceptorRole;
  storageBackend: StorageBackend;
  /** How long the store is waited for at start before the server gives up, in ms. */
  storageInitializationTimeoutMs: number;
  /** On a shared store (etcd): elect one server to run the controllers (upstream controller manager's --leader-elect). */
  leaderElect: boolean;
  leaderElectLeaseDurationMs: number;
  leaderElectRenewDeadlineMs: number;
  leaderElectRetryPeriodMs: number;
  /** EncryptionConfiguration file for encryption at rest; empty: none. */
  encryptionProviderConfig: string;
  /** Follow --encryption-provider-config for changes (each thread reloads it). */
  encryptionProviderConfigAutomaticReload: boolean;
  /** Compaction interval in ms: each run compacts to the revision seen one interval earlier (history kept one to two intervals); 0 disables compaction. */
  compactionIntervalMs: number;
  /** Events kept per resource in the watch cache ring. */
  watchCacheSize: number;
  /** Bytes the watch cache ring of one resource may hold. */
  watchCacheBytes: number;
  /** Bookmark interval for watches that allow bookmarks, in ms. */
  watchBookmarkIntervalMs: number;
  /** Watcher send buffer limit in bytes before a slow watcher is closed. */
  watchBufferBytes: number;
  minRequestTimeoutSeconds: number;
  requestTimeoutMs: number;
  maxRequestsInflight: number;
  maxMutatingRequestsInflight: number;
  /** API Priority and Fairness instead of the two in-flight counters (core/flowcontrol/). */
  enablePriorityAndFairness: boolean;
  livezGracePeriodMs: number;
  shutdownDelayMs: number;
  featureGates: Record<string, boolean>;
  /** text (klog-like lines) or json (one object per line). */
  loggingFormat: LoggingFormat;
  /** Log verbosity (-v): lines of a level above it are not written; 3 logs every request. */
  verbosity: number;
  /** Deprecated flags that were used, as warnings to log at start (spec rule 6). */
  flagWarnings: string[];
  /** The previous minor release ('1.31'): metrics hidden in this release are shown again. */
  showHiddenMetricsForVersion: string;
  runtimeConfig: Record<string, boolean>;
  /** Largest request body accepted, in bytes (upstream: 3 MiB). */
  maxRequestBodyBytes: number;
  /** How long an Event lives after its last write, in ms (0: forever). */
  eventTtlMs: number;
  /** --controllers: `*`, names, `-name`. */
  controllers: string[];
  /** Admission plugins on beyond the default set, and those turned off (upstream's names). */
  enableAdmissionPlugins: string[];
  disableAdmissionPlugins: string[];
  /** AdmissionConfiguration file: per-plugin configuration (webhook kubeconfigs, quota limits). */
  admissionControlConfigFile: string;
  /** Serve every svc.io group also under its upstream k8s.io spelling. */
  upstreamGroupAliases: boolean;
  /** Client certificate and key the aggregator presents to extension API servers. */
  proxyClientCertFile: string;
  proxyClientKeyFile: string;
  /** Resolve APIService service references through their Endpoints rather than `<name>.<namespace>.svc`. */
  enableAggregatorRouting: boolean;
  /** No flag: how often the aggregator checks a remote APIService's availability again (upstream: 30s). */
  aggregatorRecheckMs?: number;
  /** No flag: how often the client CA and serving certificate files are read again besides change notifications (upstream: a minute). */
  certificateFileCheckMs?: number;
  /** No flag: a test's own clock for the stuck-watch sweep, whose looks it then runs itself (endpoints/watch.ts). */
  watchSweepClock?: SweepClock;
  /** No flag: a test's own clock for the certificate controllers, whose cleaner passes it then runs itself. */
  certificatesClock?: ControllerClock;
}

/**
 * Flag kinds. `list` is a comma-separated list whose last occurrence wins; `strings` (pflag's
 * StringArray) and `csv` (pflag's StringSlice) may be repeated, each occurrence adding to the list;
 * `stringMap` is one `key=value` per occurrence (pflag's MapStringStringNoSplit), occurrences adding up.
 */
type Kind = 'int' | 'string' | 'bool' | 'duration' | 'list' | 'strings' | 'csv' | 'map' | 'stringMap';

interface FlagSpec {
  name: string;
  key: keyof ServerOptions;
  kind: Kind;
  def: unknown;
  help: string;
  /** Set for a deprecated flag: it still works, and using it logs this warning (spec rule 6). */
  deprecated?: string;
}

const flags: FlagSpec[] = [
  { name: 'secure-port', key: 'securePort', kind: 'int', def: 6443, help: 'The port on which to serve HTTPS with authentication and authorization.' },
  { name: 'grpc-port', key: 'grpcPort', kind: 'int', def: 0, help: 'The port on which to serve the resource API over gRPC (svc.api.v1.Resources, TLS, HTTP/2) with the same authentication and authorization; 0 turns it off.' },
  { name: 'grpc-max-streams-per-connection', key: 'grpcMaxStreamsPerConnection', kind: 'int', def: 10000, help: 'Calls (watches included) one gRPC connection may have open at once; one more is answered RESOURCE_EXHAUSTED.' },
  { name: 'bind-address', key: 'bindAddress', kind: 'string', def: '127.0.0.1', help: 'The IP address on which to listen for the --secure-port port.' },
  { name: 'data-dir', key: 'dataDir', kind: 'string', def: './.svc-data', help: 'Directory of the embedded store, generated certificates and admin.kubeconfig.' },
  { name: 'tls-cert-file', key: 'tlsCertFile', kind: 'string', def: '', help: 'File containing the default x509 serving certificate (generated in --data-dir when unset).' },
  { name: 'tls-private-key-file', key: 'tlsPrivateKeyFile', kind: 'string', def: '', help: 'File containing the default x509 private key matching --tls-cert-file.' },
  { name: 'client-ca-file', key: 'clientCAFile', kind: 'string', def: '', help: 'Client certificates signed by these CAs are authenticated (CN user, O groups). Defaults to the generated CA when the serving certificate is generated.' },
  { name: 'token-auth-file', key: 'tokenAuthFile', kind: 'string', def: '', help: 'CSV file of static bearer tokens: token,user,uid[,"group1,group2"].' },
  { name: 'anonymous-auth', key: 'anonymousAuth', kind: 'bool', def: true, help: 'Enables anonymous requests (system:anonymous, group system:unauthenticated).' },
  { name: 'authorization-mode', key: 'authorizationMode', kind: 'list', def: ['Node', 'RBAC'], help: `Ordered list of authorization plugins: ${Object.keys(authorizationModes).join(', ')}. Group system:masters is always allowed; AlwaysAllow only when asked for.` },
  { name: 'authorization-policy-file', key: 'authorizationPolicyFile', kind: 'string', def: '', help: 'File with the ABAC policy (one JSON object per line), used with --authorization-mode=ABAC.' },
  { name: 'authorization-webhook-config-file', key: 'authorizationWebhookConfigFile', kind: 'string', def: '', help: 'File with the webhook configuration in kubeconfig format, used with --authorization-mode=Webhook.' },
  { name: 'authorization-webhook-version', key: 'authorizationWebhookVersion', kind: 'string', def: 'v1beta1', help: 'The version of the authorization.svc.io SubjectAccessReview sent to and expected from the webhook: v1beta1 or v1.' },
  { name: 'authorization-webhook-cache-authorized-ttl', key: 'authorizationWebhookCacheAuthorizedTtlMs', kind: 'duration', def: 5 * 60_000, help: "The duration to cache 'authorized' responses from the webhook authorizer." },
  { name: 'authorization-webhook-cache-unauthorized-ttl', key: 'authorizationWebhookCacheUnauthorizedTtlMs', kind: 'duration', def: 30_000, help: "The duration to cache 'unauthorized' responses from the webhook authorizer." },
  { name: 'authorization-config', key: 'authorizationConfig', kind: 'string', def: '', help: 'File with an AuthorizationConfiguration (apiserver.config.svc.io/v1): authorizers in order, webhooks with match conditions and failure policies. Reloaded on change. Not with --authorization-mode or --authorization-webhook-* flags.' },
  { name: 'acceptors', key: 'acceptors', kind: 'int', def: 0, help: 'Processes that accept connections on the port and serve requests, each with its own main thread and --workers pool over the one store; 1: the server is one process; 0 (default): one per core less one, at most 8, and one process on one or two cores.' },
  { name: 'workers', key: 'workers', kind: 'int', def: 1, help: 'Worker threads of each acceptor for the heavy work (applies, bodies over 16 KiB, lists read from the store, collection deletes); small writes run on the main thread, which spends less on them than on the hop. 0 runs everything on the main thread.' },
  { name: 'storage-backend', key: 'storageBackend', kind: 'string', def: 'lmdb', help: 'Storage backend: lmdb (embedded, in --data-dir) or etcd3 (an etcd v3 cluster at --etcd-servers, which several servers may share).' },
  { name: 'storage-initialization-timeout', key: 'storageInitializationTimeoutMs', kind: 'duration', def: 60_000, help: 'Maximum amount of time to wait for the store (etcd) to answer at start; /readyz fails meanwhile, and the server exits with an error naming the store when it passes.' },
  { name: 'etcd-servers', key: 'etcdServers', kind: 'list', def: [], help: 'List of etcd servers to connect with (scheme://ip:port), comma separated (--storage-backend=etcd3).' },
  { name: 'etcd-prefix', key: 'etcdPrefix', kind: 'string', def: '/registry', help: 'The prefix to prepend to all resource paths in etcd.' },
  { name: 'storage-media-type', key: 'storageMediaType', kind: 'string', def: '', help: 'The media type built-in objects are stored in: application/json, application/yaml or application/vnd.kubernetes.protobuf (any of them is read back). Default: protobuf with --storage-backend=etcd3, JSON with lmdb. Custom resources are always stored as JSON.' },
  { name: 'etcd-cafile', key: 'etcdCafile', kind: 'string', def: '', help: 'SSL Certificate Authority file used to secure etcd communication.' },
  { name: 'etcd-certfile', key: 'etcdCertfile', kind: 'string', def: '', help: 'SSL certification file used to secure etcd communication.' },
  { name: 'etcd-keyfile', key: 'etcdKeyfile', kind: 'string', def: '', help: 'SSL key file used to secure etcd communication.' },
  { name: 'encryption-provider-config', key: 'encryptionProviderConfig', kind: 'string', def: '', help: 'File with an EncryptionConfiguration (apiserver.config.svc.io/v1): how resources are encrypted in the store (identity, aescbc, aesgcm, secretbox).' },
  { name: 'encryption-provider-config-automatic-reload', key: 'encryptionProviderConfigAutomaticReload', kind: 'bool', def: false, help: 'Reload --encryption-provider-config when it changes (a change that does not parse is logged and the last good configuration stays).' },
  { name: 'etcd-compaction-interval', key: 'compactionIntervalMs', kind: 'duration', def: 5 * 60_000, help: 'Interval of compaction. Each run compacts the store to the revision seen one interval earlier, so continue tokens, Exact lists and watch resumptions older than one interval may still be served and those older than two intervals are answered 410 Expired. 0 disables compaction.' },
  { name: 'watch-cache-size', key: 'watchCacheSize', kind: 'int', def: 10_000, help: 'Events kept per resource in the watch cache ring (older resumptions read the store history).' },
  { name: 'watch-bookmark-interval', key: 'watchBookmarkIntervalMs', kind: 'duration', def: 60_000, help: 'How often watches that allow bookmarks receive one.' },
  { name: 'watch-cache-bytes', key: 'watchCacheBytes', kind: 'int', def: 128 * 1024 * 1024, help: 'Bytes of old object versions and encoded events the watch cache ring of one resource may hold; beyond them the oldest events are dropped (resumptions from before them read the store history).' },
  { name: 'watch-buffer-bytes', key: 'watchBufferBytes', kind: 'int', def: 256 * 1024, help: 'Bytes a watch may have unsent before the server closes it as too slow (the client resumes from its last resourceVersion); 1,000 stuck watchers hold at most about 1,000 times this.' },
  { name: 'min-request-timeout', key: 'minRequestTimeoutSeconds', kind: 'int', def: 1800, help: 'Minimum watch timeout in seconds; the server picks a random timeout in [min, 2*min).' },
  { name: 'request-timeout', key: 'requestTimeoutMs', kind: 'duration', def: 60_000, help: 'Default timeout of non-long-running requests.' },
  { name: 'max-requests-inflight', key: 'maxRequestsInflight', kind: 'int', def: 400, help: 'Maximum number of non-mutating requests in flight; more are answered 429. 0 means no limit.' },
  { name: 'max-mutating-requests-inflight', key: 'maxMutatingRequestsInflight', kind: 'int', def: 200, help: 'Maximum number of mutating requests in flight; more are answered 429. 0 means no limit.' },
  { name: 'enable-priority-and-fairness', key: 'enablePriorityAndFairness', kind: 'bool', def: true, help: 'Admit requests by API Priority and Fairness (FlowSchemas and PriorityLevelConfigurations, total concurrency --max-requests-inflight plus --max-mutating-requests-inflight); false: the two in-flight limits alone.' },
  { name: 'livez-grace-period', key: 'livezGracePeriodMs', kind: 'duration', def: 0, help: 'Time during which /livez reports ok while post-start hooks complete.' },
  { name: 'shutdown-delay-duration', key: 'shutdownDelayMs', kind: 'duration', def: 0, help: 'Time to keep serving after a termination signal, with /readyz failing.' },
  { name: 'feature-gates', key: 'featureGates', kind: 'map', def: {}, help: 'Comma-separated key=true|false pairs of feature gates.' },
  { name: 'logging-format', key: 'loggingFormat', kind: 'string', def: 'text', help: 'Sets the log format. Permitted formats: "json", "text".' },
  { name: 'v', key: 'verbosity', kind: 'int', def: 0, help: 'Number for the log level verbosity (also -v); 3 logs every request.' },
  { name: 'service-account-api-audiences', key: 'apiAudiences', kind: 'csv', def: [], help: 'Identifiers of the API. Deprecated: use --api-audiences.', deprecated: 'use --api-audiences' },
  { name: 'show-hidden-metrics-for-version', key: 'showHiddenMetricsForVersion', kind: 'string', def: '', help: "The previous minor version for which you want to show hidden metrics (only '1.31' is allowed): metrics deprecated three releases ago are hidden unless it is given." },
  { name: 'runtime-config', key: 'runtimeConfig', kind: 'map', def: {}, help: 'Comma-separated <group>/<version>[=true|false] pairs enabling or disabling API versions.' },
  { name: 'event-ttl', key: 'eventTtlMs', kind: 'duration', def: 3_600_000, help: 'Amount of time to retain events after their last write. 0 keeps them forever.' },
  { name: 'upstream-group-aliases', key: 'upstreamGroupAliases', kind: 'bool', def: true, help: 'Serve every <name>.svc.io group also as <name>.k8s.io (listed in discovery after it), for clients and manifests written for upstream; false serves the svc.io names only (the authentication and authorization reviews stay reachable under both).' },
  { name: 'leader-elect', key: 'leaderElect', kind: 'bool', def: true, help: 'With a store several servers share (etcd3): run the controllers on one server at a time, elected on the Lease svc-system/svc-controller-manager.' },
  { name: 'leader-elect-lease-duration', key: 'leaderElectLeaseDurationMs', kind: 'duration', def: 15_000, help: 'How long other servers wait, after the leader last renewed the lease, before they take it over.' },
  { name: 'leader-elect-renew-deadline', key: 'leaderElectRenewDeadlineMs', kind: 'duration', def: 10_000, help: 'How long the leader keeps trying to renew before it stops leading. Less than the lease duration.' },
  { name: 'leader-elect-retry-period', key: 'leaderElectRetryPeriodMs', kind: 'duration', def: 2_000, help: 'How often servers try to take or renew the lease.' },
  { name: 'controllers', key: 'controllers', kind: 'list', def: ['*'], help: 'Controllers to run beside the API: "*" runs every controller on by default, "foo" turns one on, "-foo" turns one off. Off by default: bootstrapsigner, tokencleaner.' },
  { name: 'enable-admission-plugins', key: 'enableAdmissionPlugins', kind: 'list', def: [], help: 'Admission plugins to turn on beside the default set (NamespaceLifecycle, NodeRestriction, MutatingAdmissionWebhook, ValidatingAdmissionPolicy, ValidatingAdmissionWebhook, ResourceQuota, CertificateApproval, CertificateSigning, CertificateSubjectRestriction, ClusterTrustBundleAttest, and those for kinds this server does not serve). They run in upstream\'s order whatever the order here.' },
  { name: 'disable-admission-plugins', key: 'disableAdmissionPlugins', kind: 'list', def: [], help: 'Admission plugins to turn off, even when on by default.' },
  { name: 'admission-control-config-file', key: 'admissionControlConfigFile', kind: 'string', def: '', help: 'File with an AdmissionConfiguration (apiserver.config.svc.io/v1): per-plugin configuration, such as the kubeconfig the admission webhooks use to reach their servers.' },
  { name: 'max-request-body-bytes', key: 'maxRequestBodyBytes', kind: 'int', def: 3 * 1024 * 1024, help: 'Largest request body accepted; larger bodies are answered 413.' },
  // authentication: OpenID Connect, the structured configuration, the webhook, the authenticating proxy
  { name: 'authentication-config', key: 'authenticationConfig', kind: 'string', def: '', help: 'File with an AuthenticationConfiguration (apiserver.config.svc.io/v1beta1) of JWT authenticators; reloaded when it changes. Exclusive with the --oidc-* flags.' },
  { name: 'oidc-issuer-url', key: 'oidcIssuerUrl', kind: 'string', def: '', help: 'The URL of the OpenID issuer, https only; its discovery document gives the signing keys.' },
  { name: 'oidc-client-id', key: 'oidcClientId', kind: 'string', def: '', help: 'The audience every ID token must be issued to; required with --oidc-issuer-url.' },
  { name: 'oidc-username-claim', key: 'oidcUsernameClaim', kind: 'string', def: '', help: 'The claim used as the user name (default "sub").' },
  { name: 'oidc-username-prefix', key: 'oidcUsernamePrefix', kind: 'string', def: '', help: 'Prefix of user names; unset means "<issuer url>#" for claims other than email; "-" means none.' },
  { name: 'oidc-groups-claim', key: 'oidcGroupsClaim', kind: 'string', def: '', help: 'The claim holding the groups (a string or an array of strings).' },
  { name: 'oidc-groups-prefix', key: 'oidcGroupsPrefix', kind: 'string', def: '', help: 'Prefix of group names.' },
  { name: 'oidc-required-claim', key: 'oidcRequiredClaim', kind: 'stringMap', def: {}, help: 'A key=value claim the ID token must carry; repeat the flag for several.' },
  { name: 'oidc-ca-file', key: 'oidcCaFile', kind: 'string', def: '', help: "CA bundle for the identity provider's certificate (default: the host's roots)." },
  { name: 'oidc-signing-algs', key: 'oidcSigningAlgs', kind: 'csv', def: [], help: 'Accepted JOSE signing algorithms (default RS256): RS256, RS384, RS512, ES256, ES384, ES512, PS256, PS384, PS512.' },
  { name: 'authentication-token-webhook-config-file', key: 'authenticationTokenWebhookConfigFile', kind: 'string', def: '', help: 'Client-configuration (kubeconfig) file of the token authentication webhook.' },
  { name: 'authentication-token-webhook-cache-ttl', key: 'authenticationTokenWebhookCacheTtlMs', kind: 'duration', def: 2 * 60_000, help: 'How long webhook answers are cached.' },
  { name: 'authentication-token-webhook-version', key: 'authenticationTokenWebhookVersion', kind: 'string', def: 'v1beta1', help: 'TokenReview version sent to and expected from the webhook: v1beta1 or v1.' },
  { name: 'authentication-token-webhook-timeout', key: 'authenticationTokenWebhookTimeoutMs', kind: 'duration', def: 30_000, help: 'Deadline of one webhook review, retries included (upstream: a fixed 30s client timeout).' },
  { name: 'requestheader-client-ca-file', key: 'requestheaderClientCAFile', kind: 'string', def: '', help: 'CA bundle the authenticating proxy certificate must chain to before its identity headers are trusted.' },
  { name: 'requestheader-allowed-names', key: 'requestheaderAllowedNames', kind: 'csv', def: [], help: 'Common names the proxy certificate may carry; empty allows any chaining to the CA.' },
  { name: 'requestheader-username-headers', key: 'requestheaderUsernameHeaders', kind: 'csv', def: [], help: 'Headers holding the user name (the first non-empty one wins); X-Remote-User is common.' },
  { name: 'requestheader-uid-headers', key: 'requestheaderUidHeaders', kind: 'csv', def: [], help: 'Headers holding the user UID (feature RemoteRequestHeaderUID); X-Remote-Uid is common.' },
  { name: 'requestheader-group-headers', key: 'requestheaderGroupHeaders', kind: 'csv', def: [], help: 'Headers holding group names; X-Remote-Group is common.' },
  { name: 'requestheader-extra-headers-prefix', key: 'requestheaderExtraHeadersPrefix', kind: 'csv', def: [], help: 'Header prefixes whose headers carry extra user attributes; X-Remote-Extra- is common.' },
  { name: 'enable-bootstrap-token-auth', key: 'enableBootstrapTokenAuth', kind: 'bool', def: false, help: 'Allows bearer tokens of type bootstrap.svc.io/token Secrets in svc-system (user system:bootstrap:<token id>).' },
  { name: 'service-account-issuer', key: 'serviceAccountIssuers', kind: 'strings', def: ['https://svc.default.svc.cluster.local'], help: 'Issuer (iss) of service account tokens; repeatable: the first issues, every one is accepted.' },
  { name: 'service-account-key-file', key: 'serviceAccountKeyFiles', kind: 'strings', def: [], help: 'PEM file of RSA or ECDSA keys (private or public, or certificates) that verify service account tokens; repeatable. Default: --tls-private-key-file. The signing key always verifies too.' },
  { name: 'service-account-signing-key-file', key: 'serviceAccountSigningKeyFile', kind: 'string', def: '', help: 'PEM private key (RSA or ECDSA) that signs service account tokens. Generated in --data-dir when unset and the serving certificate is generated.' },
  { name: 'api-audiences', key: 'apiAudiences', kind: 'csv', def: [], help: 'Audiences of this API server: tokens must be for one of them. Default: the first --service-account-issuer.' },
  { name: 'service-account-lookup', key: 'serviceAccountLookup', kind: 'bool', def: true, help: 'Rejects service account tokens whose ServiceAccount (or bound object) is gone or was recreated.' },
  { name: 'service-account-jwks-uri', key: 'serviceAccountJwksUri', kind: 'string', def: '', help: 'jwks_uri of the issuer discovery document. Default: https://<this server>/openid/v1/jwks.' },
  { name: 'service-account-max-token-expiration', key: 'serviceAccountMaxTokenExpirationMs', kind: 'duration', def: 0, help: 'Longest lifetime of an issued service account token; longer requests are shortened (with a warning). 0: no limit.' },
  { name: 'proxy-client-cert-file', key: 'proxyClientCertFile', kind: 'string', def: '', help: 'Client certificate the aggregator presents to extension API servers it proxies to (they trust it through --requestheader-client-ca-file, published in svc-system/extension-apiserver-authentication).' },
  { name: 'proxy-client-key-file', key: 'proxyClientKeyFile', kind: 'string', def: '', help: 'Private key of --proxy-client-cert-file.' },
  { name: 'enable-aggregator-routing', key: 'enableAggregatorRouting', kind: 'bool', def: false, help: 'Route aggregator requests to an address of the Endpoints object of the APIService\'s service instead of <name>.<namespace>.svc.' },
  ...auditFlags,
  ...certificateFlags,
];

export class FlagError extends Error {}

/** Parses a Go duration (`1h2m3s`, `500ms`, `2s`, `0`) into milliseconds. */
export function parseDuration(text: string): number {
  if (text === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    total += Number(m[1]) * unit[m[2]!]!;
    consumed += m[0].length;
  }
  if (consumed !== text.length || text.length === 0) throw new FlagError(`invalid duration ${JSON.stringify(text)}`);
  return total;
}

function parseValue(spec: FlagSpec, raw: string): unknown {
  switch (spec.kind) {
    case 'int': {
      if (!/^-?\d+$/.test(raw)) throw new FlagError(`invalid argument ${JSON.stringify(raw)} for "--${spec.name}" flag: not an integer`);
      return Number(raw);
    }
    case 'bool': {
      const l = raw.toLowerCase();
      if (['true', '1', 't'].includes(l)) return true;
      if (['false', '0', 'f'].includes(l)) return false;
      throw new FlagError(`invalid argument ${JSON.stringify(raw)} for "--${spec.name}" flag: not a boolean`);
    }
    case 'duration':
      return parseDuration(raw);
    case 'list':
    case 'csv':
      return raw.split(',').map((s) => s.trim()).filter(Boolean);
    case 'strings':
      return [raw];
    case 'stringMap': {
      const eq = raw.indexOf('=');
      if (eq <= 0) throw new FlagError(`invalid argument ${JSON.stringify(raw)} for "--${spec.name}" flag: malformed pair, expect string=string`);
      return { [raw.slice(0, eq)]: raw.slice(eq + 1) };
    }
    case 'map': {
      const out: Record<string, boolean> = {};
      for (const pair of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
        const eq = pair.indexOf('=');
        const k = eq < 0 ? pair : pair.slice(0, eq);
        const v = eq < 0 ? 'true' : pair.slice(eq + 1);
        if (!['true', 'false'].includes(v.toLowerCase())) throw new FlagError(`invalid value of ${k}: ${v}, err: strconv.ParseBool: parsing ${JSON.stringify(v)}: invalid syntax`);
        out[k] = v.toLowerCase() === 'true';
      }
      return out;
    }
    default:
      return raw;
  }
}

export function defaultOptions(): ServerOptions {
  const o: Record<string, unknown> = {};
  for (const f of flags) o[f.key] = structuredClone(f.def);
  o.flagWarnings = [];
  return o as unknown as ServerOptions;
}

/** Parses `--name=value` / `--name value` / `--bool-flag`; unknown flags are errors. */
export function parseFlags(argv: readonly string[]): ServerOptions {
  const o = defaultOptions() as unknown as Record<string, unknown>;
  const repeated = new Set<string>();
  const given = new Set<string>();
  const warnings: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    // -v is the one short flag, as upstream's pflag shorthand for --v
    const arg = argv[i] === '-v' || argv[i]!.startsWith('-v=') ? `-${argv[i]}` : argv[i]!;
    if (!arg.startsWith('--')) throw new FlagError(`unexpected argument ${JSON.stringify(arg)}`);
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    const spec = flags.find((f) => f.name === name);
    if (!spec) throw new FlagError(`unknown flag: --${name}`);
    if (spec.deprecated) warnings.push(`Flag --${name} has been deprecated, ${spec.deprecated}`);
    let raw: string;
    if (eq >= 0) raw = arg.slice(eq + 1);
    else if (spec.kind === 'bool') raw = 'true';
    else {
      const next = argv[++i];
      if (next === undefined) throw new FlagError(`flag needs an argument: --${name}`);
      raw = next;
    }
    const value = parseValue(spec, raw);
    if (spec.kind === 'strings' || spec.kind === 'csv') {
      // the first occurrence replaces the default, later ones add to it
      o[spec.key] = repeated.has(spec.name) ? [...(o[spec.key] as string[]), ...(value as string[])] : value;
      repeated.add(spec.name);
    } else if (spec.kind === 'stringMap') o[spec.key] = { ...(o[spec.key] as object), ...(value as object) };
    else o[spec.key] = value;
    given.add(spec.name);
  }
  const opts = o as unknown as ServerOptions;
  opts.flagWarnings = warnings;
  if (!loggingFormats.includes(opts.loggingFormat)) {
    throw new FlagError(`invalid value ${JSON.stringify(opts.loggingFormat)} for --logging-format: Unsupported value: permitted formats: ${loggingFormats.map((f) => JSON.stringify(f)).join(', ')}`);
  }
  if (opts.verbosity < 0) throw new FlagError('-v must be 0 or more');
  if (opts.workers < 0) throw new FlagError('--workers must be 0 or more');
  if (opts.acceptors < 0) throw new FlagError('--acceptors must be 0 or more');
  if (opts.leaderElect && opts.leaderElectRenewDeadlineMs >= opts.leaderElectLeaseDurationMs) throw new FlagError('--leader-elect-renew-deadline must be less than --leader-elect-lease-duration');
  const storageError = storageFlagError(opts);
  if (storageError) throw new FlagError(storageError);
  try {
    showHiddenMetricsFor(opts.showHiddenMetricsForVersion);
  } catch (e) {
    if (e instanceof MetricsFlagError) throw new FlagError(e.message);
    throw e;
  }
  const authzError = authorizationFlagError(opts, given);
  if (authzError) throw new FlagError(authzError);
  const auditError = auditFlagError(opts);
  if (auditError) throw new FlagError(auditError);
  const certificateError = certificateFlagError(opts);
  if (certificateError) throw new FlagError(certificateError);
  const maxTokenMs = opts.serviceAccountMaxTokenExpirationMs;
  if (maxTokenMs !== 0 && (maxTokenMs < 3_600_000 || maxTokenMs > 2 ** 32 * 1000)) {
    throw new FlagError('the service-account-max-token-expiration must be between 1 hour and 2^32 seconds');
  }
  try {
    selectControllers(opts.controllers);
  } catch (e) {
    if (e instanceof ControllersFlagError) throw new FlagError(`--controllers: ${e.message}`);
    throw e;
  }
  return opts;
}

export function helpText(): string {
  const lines = ['Usage: svc-apiserver [flags]', '', 'Flags:'];
  for (const f of flags) {
    const def = f.kind === 'duration' ? `${f.def}ms` : JSON.stringify(f.def);
    lines.push(`  --${f.name} (${f.kind}, default ${def})`, `      ${f.help}`);
  }
  return lines.join('\n');
}
