/**
 * Certificates: the built-in signers' CAs from the --cluster-signing-* flags (or the generated
 * cluster CA), read before anything is opened so an unreadable file stops the start; the signing,
 * approving and cleaning controllers (core/controllers/csr-*.ts) run with the other controllers.
 */
import { resolveSigners } from '../../certificates/options.js';
import type { ServerFeature } from '../feature.js';

export function certificatesFeature(): ServerFeature {
  return {
    name: 'certificates',
    configure(c) {
      c.shared.certificateSigners = resolveSigners(c.opts, c.opts.dataDir, !c.opts.tlsCertFile);
    },
  };
}
