/**
 * CA bundles that client certificates are checked against, as upstream's dynamic CA content:
 * --client-ca-file and --requestheader-client-ca-file are read again when the file changes (a watch
 * on its directory, so a file replaced by rename is seen) and on a schedule (upstream: once a minute).
 * A text that is empty, does not parse or holds no certificate keeps the last good bundle and is
 * logged, once per bad text. Whoever uses a bundle (the listener's trusted CAs, the x509 and
 * request-header authenticators, the gRPC transport, the extension-apiserver-authentication
 * ConfigMap) reads `bundle`/`pem` when it needs them and subscribes to be told of a change.
 * A CA generated at first start is a fixed CAContent: it never changes.
 */
import { readFileSync } from 'node:fs';
import { FollowedFile } from '../api/followed-file.js';
import { AuthenticationConfigError } from './authn-config.js';
import { CABundle } from './client-ca.js';

/** Upstream's FileRefreshDuration. */
export const CA_FILE_CHECK_MS = 60_000;

/** A bundle of CAs and who wants to hear when it changes. */
export class CAContent {
  private listeners = new Set<() => void>();
  protected current: { pem: string; bundle: CABundle };

  constructor(pem: string) {
    this.current = { pem, bundle: new CABundle(pem) };
  }

  get pem(): string {
    return this.current.pem;
  }

  get bundle(): CABundle {
    return this.current.bundle;
  }

  /** Calls `fn` after each change of the bundle; returns the unsubscribe. */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  protected replace(pem: string, bundle: CABundle): void {
    this.current = { pem, bundle };
    for (const fn of this.listeners) {
      try {
        fn();
      } catch (e) {
        // one user failing to take the new bundle must not keep it from the others
        console.error(`svc-apiserver: applying a changed CA bundle failed: ${(e as Error).message}`);
      }
    }
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
  private file: FollowedFile | undefined;
  private badText: string | undefined;

  /** Reads the file now: a file that cannot be read or holds no certificate is a start error naming `flag`. */
  constructor(
    purpose: string,
    private readonly path: string,
    flag: string,
  ) {
    const name = `${purpose}::${path}`;
    let pem: string;
    try {
      pem = readFileSync(path, 'utf8');
    } catch (e) {
      throw new AuthenticationConfigError(`${flag}: unable to load client CA file ${JSON.stringify(path)}: ${(e as Error).message}`);
    }
    try {
      parseBundle(name, pem);
    } catch (e) {
      throw new AuthenticationConfigError(`${flag} ${JSON.stringify(path)}: ${(e as Error).message}`);
    }
    super(pem);
    this.name = name;
  }

  /** Follows the file: a change is read soon after it is noticed, and the file is read every `checkMs` anyway. */
  start(checkMs = CA_FILE_CHECK_MS): void {
    this.file ??= new FollowedFile(this.path, () => this.check(), checkMs);
  }

  stop(): void {
    this.file?.close();
    this.file = undefined;
  }

  /** Reads the file; returns whether the bundle changed. A bad text keeps the last good bundle. */
  check(): boolean {
    let pem: string;
    try {
      pem = readFileSync(this.path, 'utf8');
    } catch (e) {
      this.refuse(`\0${(e as Error).message}`, (e as Error).message);
      return false;
    }
    if (pem === this.pem || pem === this.badText) return false;
    let bundle: CABundle;
    try {
      bundle = parseBundle(this.name, pem);
    } catch (e) {
      this.refuse(pem, (e as Error).message);
      return false;
    }
    this.badText = undefined;
    console.log(`svc-apiserver: loaded a new CA bundle ${this.name} (${bundle.size} certificates)`);
    this.replace(pem, bundle);
    return true;
  }

  private refuse(text: string, why: string): void {
    if (text === this.badText) return;
    this.badText = text;
    console.error(`svc-apiserver: ${this.name}: keeping the last good CA bundle: ${why}`);
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
