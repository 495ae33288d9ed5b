/** The EncryptionConfiguration the encryption tests share: Secrets under aescbc with a fresh key. */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';

/** Writes it to `file` (with identity as the second, read-only provider unless `identityFallback` is false); returns `file`. */
export function writeSecretsEncryptionConfig(file: string, o: { identityFallback?: boolean } = {}): string {
  writeFileSync(
    file,
    `apiVersion: apiserver.config.svc.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aescbc:
          keys:
            - name: key1
              secret: ${randomBytes(32).toString('base64')}
${o.identityFallback === false ? '' : '      - identity: {}\n'}`,
  );
  return file;
}
