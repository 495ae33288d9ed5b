/**
 * A certificate and key read again when either file changes and on a schedule, as upstream's dynamic
 * certificate/key content: the serving pair (--tls-cert-file, --tls-private-key-file: connections
 * made after the change get the new one, open ones keep theirs) and the aggregator's proxy client
 * pair (--proxy-client-cert-file, --proxy-client-key-file). A pair that cannot be read, does not
 * parse or whose key does not match the certificate keeps the last good pair and is logged, once per
 * bad text. A generated certificate never changes.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { FollowedFile } from '../api/followed-file.js';
import { CA_FILE_CHECK_MS } from '../authn/dynamic-ca-file.js';

export interface KeyPairText {
  cert: string;
  key: string;
}

/** Throws unless the certificate parses and the key is the certificate's (upstream: tls.X509KeyPair). */
function checkPair(p: KeyPairText): void {
  const cert = new X509Certificate(p.cert);
  if (!cert.checkPrivateKey(createPrivateKey(p.key))) throw new Error('tls: private key does not match public key');
}

export class FollowedKeyPair {
  private current: KeyPairText;
  private readonly listeners = new Set<() => void>();
  private files: FollowedFile[] = [];
  private badText: string | undefined;

  /** `paths`: where the pair is read again from (none: it never changes). The first pair is taken as it is. `what` names it in the log. */
  constructor(
    private readonly what: string,
    first: KeyPairText,
    private readonly paths?: { cert: string; key: string },
  ) {
    this.current = first;
  }

  get cert(): string {
    return this.current.cert;
  }

  get key(): string {
    return this.current.key;
  }

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  start(checkMs = CA_FILE_CHECK_MS): void {
    if (!this.paths || this.files.length) return;
    this.files = [new FollowedFile(this.paths.cert, () => this.check(), checkMs), new FollowedFile(this.paths.key, () => this.check(), checkMs)];
  }

  stop(): void {
    for (const f of this.files.splice(0)) f.close();
  }

  /** Reads both files; returns whether the pair changed. */
  check(): boolean {
    if (!this.paths) return false;
    let next: KeyPairText;
    try {
      next = { cert: readFileSync(this.paths.cert, 'utf8'), key: readFileSync(this.paths.key, 'utf8') };
    } catch (e) {
      this.refuse(`\0${(e as Error).message}`, (e as Error).message);
      return false;
    }
    if (next.cert === this.current.cert && next.key === this.current.key) return false;
    const text = `${next.cert}\0${next.key}`;
    if (text === this.badText) return false;
    try {
      checkPair(next);
    } catch (e) {
      this.refuse(text, (e as Error).message);
      return false;
    }
    this.badText = undefined;
    this.current = next;
    console.log(`svc-apiserver: loaded a new ${this.what} from ${this.paths.cert}`);
    for (const fn of this.listeners) {
      try {
        fn();
      } catch (e) {
        console.error(`svc-apiserver: applying a changed ${this.what} failed: ${(e as Error).message}`);
      }
    }
    return true;
  }

  private refuse(text: string, why: string): void {
    if (text === this.badText) return;
    this.badText = text;
    console.error(`svc-apiserver: ${this.what} ${this.paths!.cert}: keeping the last good pair: ${why}`);
  }
}
