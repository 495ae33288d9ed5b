/**
 * CA bundles that client certificates are checked against, as upstream's dynamic CA content:
 * --client-ca-file and --requestheader-client-ca-file are read again when the file changes (a watch
 * on its directory, so a file replaced by rename is seen) and on a schedule (upstream: once a minute).
 * A text that is empty, does not parse or holds no certificate keeps the last good bundle and is
 * logged, once per bad text (the following and keeping: core/api/followed-content.ts; what a good
 * bundle is: here). Whoever uses a bundle (the listener's trusted CAs, the x509 and
 * request-header authenticators, the gRPC transport, the extension-apiserver-authentication
 * ConfigMap) reads `bundle`/`pem` when it needs them and subscribes to be told of a change.
 * A CA generated at first start is a fixed CAContent: it never changes.
 */
import { readFileSync } from 'node:fs';
import { type ContentFiles, FILE_CHECK_MS, FollowedContent } from '../api/followed-content.js';
import { AuthenticationConfigError } from './authn-config.js';
import { CABundle } from './client-ca.js';

/** Upstream's FileRefreshDuration. */
export const CA_FILE_CHECK_MS = FILE_CHECK_MS;

/** A bundle of CAs and who wants to hear when it changes (followed from a file: DynamicCAFile). */
export class CAContent extends FollowedContent<CABundle> {
  constructor(pem: string, bundle = new CABundle(pem), from?: ContentFiles<CABundle>) {
    super('CA bundle', [pem], bundle, from);
  }

  get pem(): string {
    return this.texts[0]!;
  }

  get bundle(): CABundle {
    return this.value;
  }
}

/** The parsed bundle of a CA file's text, or why it is not one (upstream's messages). */
function parseBundle(name: string, pem: string): CABundle {
  if (pem.length === 0) throw new Error(`missing content for CA bundle "${name}"`);
  let bundle: CABundle;
  try {
    bundle = new CABundle(pem);
  } catch (e) {
    throw new Error(`error loading CA bundle for "${name}": ${(e as Error).message}`);
  }
  if (bundle.size === 0) throw new Error(`error loading CA bundle for "${name}": data does not contain any valid RSA or ECDSA certificates`);
  return bundle;
}

export class DynamicCAFile extends CAContent {
  /** Upstream's name: `<purpose>::<file>`. */
  readonly name: string;

  /**
   * Reads the file now: a file that cannot be read or holds no certificate is a start error naming
   * `flag`. start() follows it (FollowedContent).
   */
  constructor(purpose: string, path: string, flag: string) {
    const name = `${purpose}::${path}`;
    let pem: string;
    try {
      pem = readFileSync(path, 'utf8');
    } catch (e) {
      throw new AuthenticationConfigError(`${flag}: unable to load client CA file ${JSON.stringify(path)}: ${(e as Error).message}`);
    }
    let bundle: CABundle;
    try {
      bundle = parseBundle(name, pem);
    } catch (e) {
      throw new AuthenticationConfigError(`${flag} ${JSON.stringify(path)}: ${(e as Error).message}`);
    }
    super(pem, bundle, {
      files: [path],
      parse: ([text]) => parseBundle(name, text!),
      loaded: (b) => `loaded a new CA bundle ${name} (${b.size} certificates)`,
      refused: (why) => `${name}: keeping the last good CA bundle: ${why}`,
    });
    this.name = name;
  }
}

/** The client CA bundles of a server: --client-ca-file (or the generated CA) and --requestheader-client-ca-file. */
export interface ClientCAs {
  client?: CAContent;
  requestHeader?: CAContent;
}

/** The union the TLS handshake trusts: both bundles (each authenticator then checks its own), or undefined when neither is set. */
export function handshakeCAs(cas: ClientCAs): string | undefined {
  const pems = [cas.client?.pem ?? '', cas.requestHeader?.pem ?? ''].filter(Boolean);
  return pems.length ? pems.join('\n') : undefined;
}

/** Calls `fn` when either bundle changes; returns the unsubscribe. */
export function onClientCAChange(cas: ClientCAs, fn: () => void): () => void {
  const offs = [cas.client?.onChange(fn), cas.requestHeader?.onChange(fn)];
  return () => offs.forEach((off) => off?.());
}
