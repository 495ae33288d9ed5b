/**
 * Server options and their command-line flags, spelled as upstream spells them (`--secure-port`,
 * `--client-ca-file`, `--authorization-mode`, ...) plus our own (`--data-dir`, `--workers`,
 * `--storage-backend`, `--watch-cache-size`). One table drives parsing, defaults and --help.
 */
import type { AuthenticationOptions } from '../authn/factory.js';
import { type AuthorizationOptions, authorizationModes } from '../authz/factory.js';
import { ControllersFlagError, selectControllers } from '../controllers/manager.js';

export interface ServerOptions extends AuthenticationOptions, AuthorizationOptions {
  securePort: number;
  bindAddress: string;
  dataDir: string;
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  clientCAFile: string;
  tokenAuthFile: string;
  anonymousAuth: boolean;
  authorizationMode: string[];
  workers: number;
  storageBackend: 'lmdb';
  /** Compaction interval in ms: each run compacts to the revision seen one interval earlier (history kept one to two intervals); 0 disables compaction. */
  compactionIntervalMs: number;
  /** Events kept per resource in the watch cache ring. */
  watchCacheSize: number;
  /** Bookmark interval for watches that allow bookmarks, in ms. */
  watchBookmarkIntervalMs: number;
  /** Watcher send buffer limit in bytes before a slow watcher is closed. */
  watchBufferBytes: number;
  minRequestTimeoutSeconds: number;
  requestTimeoutMs: number;
  maxRequestsInflight: number;
  maxMutatingRequestsInflight: number;
  livezGracePeriodMs: number;
  shutdownDelayMs: number;
  featureGates: Record<string, boolean>;
  runtimeConfig: Record<string, boolean>;
  /** Largest request body accepted, in bytes (upstream: 3 MiB). */
  maxRequestBodyBytes: number;
  /** How long an Event lives after its last write, in ms (0: forever). */
  eventTtlMs: number;
  /** --controllers: `*`, names, `-name`. */
  controllers: string[];
}

type Kind = 'int' | 'string' | 'bool' | 'duration' | 'list' | 'map';

interface FlagSpec {
  name: string;
  key: keyof ServerOptions;
  kind: Kind;
  def: unknown;
  help: string;
}

const flags: FlagSpec[] = [
  { name: 'secure-port', key: 'securePort', kind: 'int', def: 6443, help: 'The port on which to serve HTTPS with authentication and authorization.' },
  { name: 'bind-address', key: 'bindAddress', kind: 'string', def: '127.0.0.1', help: 'The IP address on which to listen for the --secure-port port.' },
  { name: 'data-dir', key: 'dataDir', kind: 'string', def: './.svc-data', help: 'Directory of the embedded store, generated certificates and admin.kubeconfig.' },
  { name: 'tls-cert-file', key: 'tlsCertFile', kind: 'string', def: '', help: 'File containing the default x509 serving certificate (generated in --data-dir when unset).' },
  { name: 'tls-private-key-file', key: 'tlsPrivateKeyFile', kind: 'string', def: '', help: 'File containing the default x509 private key matching --tls-cert-file.' },
  { name: 'client-ca-file', key: 'clientCAFile', kind: 'string', def: '', help: 'Client certificates signed by these CAs are authenticated (CN user, O groups). Defaults to the generated CA when the serving certificate is generated.' },
  { name: 'token-auth-file', key: 'tokenAuthFile', kind: 'string', def: '', help: 'CSV file of static bearer tokens: token,user,uid[,"group1,group2"].' },
  { name: 'anonymous-auth', key: 'anonymousAuth', kind: 'bool', def: true, help: 'Enables anonymous requests (system:anonymous, group system:unauthenticated).' },
  { name: 'authorization-mode', key: 'authorizationMode', kind: 'list', def: ['RBAC'], help: 'Ordered list of authorization plugins: AlwaysAllow, AlwaysDeny, RBAC. Group system:masters is always allowed.' },
  { name: 'workers', key: 'workers', kind: 'int', def: 2, help: 'Worker threads for decode/validate/merge/store/encode; 0 runs everything on the main thread.' },
  { name: 'storage-backend', key: 'storageBackend', kind: 'string', def: 'lmdb', help: 'Storage backend: lmdb (embedded, in --data-dir).' },
  { name: 'etcd-compaction-interval', key: 'compactionIntervalMs', kind: 'duration', def: 5 * 60_000, help: 'Interval of compaction. Each run compacts the store to the revision seen one interval earlier, so continue tokens, Exact lists and watch resumptions older than one interval may still be served and those older than two intervals are answered 410 Expired. 0 disables compaction.' },
  { name: 'watch-cache-size', key: 'watchCacheSize', kind: 'int', def: 10_000, help: 'Events kept per resource in the watch cache ring (older resumptions read the store history).' },
  { name: 'watch-bookmark-interval', key: 'watchBookmarkIntervalMs', kind: 'duration', def: 60_000, help: 'How often watches that allow bookmarks receive one.' },
  { name: 'watch-buffer-bytes', key: 'watchBufferBytes', kind: 'int', def: 16 * 1024 * 1024, help: 'Bytes a watch may have unsent before the server closes it as too slow.' },
  { name: 'min-request-timeout', key: 'minRequestTimeoutSeconds', kind: 'int', def: 1800, help: 'Minimum watch timeout in seconds; the server picks a random timeout in [min, 2*min).' },
  { name: 'request-timeout', key: 'requestTimeoutMs', kind: 'duration', def: 60_000, help: 'Default timeout of non-long-running requests.' },
  { name: 'max-requests-inflight', key: 'maxRequestsInflight', kind: 'int', def: 400, help: 'Maximum number of non-mutating requests in flight; more are answered 429. 0 means no limit.' },
  { name: 'max-mutating-requests-inflight', key: 'maxMutatingRequestsInflight', kind: 'int', def: 200, help: 'Maximum number of mutating requests in flight; more are answered 429. 0 means no limit.' },
  { name: 'livez-grace-period', key: 'livezGracePeriodMs', kind: 'duration', def: 0, help: 'Time during which /livez reports ok while post-start hooks complete.' },
  { name: 'shutdown-delay-duration', key: 'shutdownDelayMs', kind: 'duration', def: 0, help: 'Time to keep serving after a termination signal, with /readyz failing.' },
  { name: 'feature-gates', key: 'featureGates', kind: 'map', def: {}, help: 'Comma-separated key=true|false pairs of feature gates.' },
  { name: 'runtime-config', key: 'runtimeConfig', kind: 'map', def: {}, help: 'Comma-separated <group>/<version>[=true|false] pairs enabling or disabling API versions.' },
  { name: 'event-ttl', key: 'eventTtlMs', kind: 'duration', def: 3_600_000, help: 'Amount of time to retain events after their last write. 0 keeps them forever.' },
  { name: 'controllers', key: 'controllers', kind: 'list', def: ['*'], help: 'Controllers to run beside the API: "*" runs every controller on by default, "foo" turns one on, "-foo" turns one off. Off by default: bootstrapsigner, tokencleaner.' },
  { name: 'max-request-body-bytes', key: 'maxRequestBodyBytes', kind: 'int', def: 3 * 1024 * 1024, help: 'Largest request body accepted; larger bodies are answered 413.' },
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
      return raw.split(',').map((s) => s.trim()).filter(Boolean);
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
  return o as unknown as ServerOptions;
}

/** Parses `--name=value` / `--name value` / `--bool-flag`; unknown flags are errors. */
export function parseFlags(argv: readonly string[]): ServerOptions {
  const o = defaultOptions() as unknown as Record<string, unknown>;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new FlagError(`unexpected argument ${JSON.stringify(arg)}`);
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    const spec = flags.find((f) => f.name === name);
    if (!spec) throw new FlagError(`unknown flag: --${name}`);
    let raw: string;
    if (eq >= 0) raw = arg.slice(eq + 1);
    else if (spec.kind === 'bool') raw = 'true';
    else {
      const next = argv[++i];
      if (next === undefined) throw new FlagError(`flag needs an argument: --${name}`);
      raw = next;
    }
    o[spec.key] = parseValue(spec, raw);
  }
  const opts = o as unknown as ServerOptions;
  if (opts.workers < 0) throw new FlagError('--workers must be 0 or more');
  if (opts.storageBackend !== 'lmdb') throw new FlagError(`--storage-backend: unsupported value ${JSON.stringify(opts.storageBackend)}: supported values: "lmdb"`);
  for (const m of opts.authorizationMode) {
    if (!Object.hasOwn(authorizationModes, m)) throw new FlagError(`authorization-mode ${JSON.stringify(m)} is not a valid mode`);
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
