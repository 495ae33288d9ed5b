/**
 * A certificate and key read again when either file changes and on a schedule, as upstream's dynamic
 * certificate/key content: the serving pair (--tls-cert-file, --tls-private-key-file: connections
 * made after the change get the new one, open ones keep theirs) and the aggregator's proxy client
 * pair (--proxy-client-cert-file, --proxy-client-key-file). A pair that cannot be read, does not
 * parse or whose key does not match the certificate keeps the last good pair and is logged, once per
 * bad text (the following and keeping: core/api/followed-content.ts; what a good pair is: here).
 * A generated certificate never changes.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { FollowedContent } from '../api/followed-content.js';

export interface KeyPairText {
  cert: string;
  key: string;
}

/** The pair, unless the certificate does not parse or the key is not the certificate's (upstream: tls.X509KeyPair). */
function checkedPair([cert, key]: readonly string[]): KeyPairText {
  const pair = { cert: cert!, key: key! };
  if (!new X509Certificate(pair.cert).checkPrivateKey(createPrivateKey(pair.key))) throw new Error('tls: private key does not match public key');
  return pair;
}

export class FollowedKeyPair extends FollowedContent<KeyPairText> {
  /** `paths`: where the pair is read again from (none: it never changes). The first pair is taken as it is. `what` names it in the log. */
  constructor(what: string, first: KeyPairText, paths?: { cert: string; key: string }) {
    super(
      what,
      [first.cert, first.key],
      first,
      paths && {
        files: [paths.cert, paths.key],
        parse: checkedPair,
        loaded: () => `loaded a new ${what} from ${paths.cert}`,
        refused: (why) => `${what} ${paths.cert}: keeping the last good pair: ${why}`,
      },
    );
  }

  get cert(): string {
    return this.value.cert;
  }

  get key(): string {
    return this.value.key;
  }
}
