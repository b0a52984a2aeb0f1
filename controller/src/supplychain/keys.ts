import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import type { SignaturePolicy } from '@kpromo/api';
import { CREDENTIAL_LABEL, isCredentialSecret } from '../credentials/credentialPolicy.js';
import { CredentialsError, readSecretObject } from '../credentials/secrets.js';
import type { KubeRest } from '../kube/rest.js';

/** A public key a signature policy trusts, named by where it came from (for messages and status). */
export interface TrustedKey {
  /** `<secret>/<key>`: which Secret entry verified a signature. */
  name: string;
  key: KeyObject;
}

/** The key kpromo signs promotion attestations with. */
export interface SigningKey {
  name: string;
  privateKey: KeyObject;
  /** PEM (SPKI) of the matching public key: what a verifier lists. */
  publicKeyPem: string;
}

type Rest = Pick<KubeRest, 'getOrUndefined'>;

/**
 * One entry of a Secret in `namespace`. Key material is read only from Secrets whose owner labelled
 * them as credentials kpromo may use: a CR names the Secret, but only the Secret's owner decides
 * that kpromo may read it (the same opt-in as registry, git and notification credentials).
 * Key material is never sent anywhere, so the destinations annotation does not apply.
 */
async function secretEntry(rest: Rest, namespace: string, name: string, key: string, purpose: string) {
  const s = await readSecretObject(rest, namespace, name);
  const where = `Secret ${namespace}/${name} (${purpose})`;
  if (!s) throw new CredentialsError('CredentialsNotFound', `${where} not found`);
  if (!isCredentialSecret(s))
    throw new CredentialsError(
      'CredentialsNotAllowed',
      `${where} is not marked for kpromo's use: its owner must label it ${CREDENTIAL_LABEL}=true`,
    );
  const value = s.data[key];
  if (value === undefined) throw new CredentialsError('CredentialsInvalid', `${where} has no key "${key}"`);
  return { value, where };
}

/** The public keys a signature policy lists, from their Secrets in `namespace`. */
export async function trustedKeys(rest: Rest, namespace: string, policy: SignaturePolicy): Promise<TrustedKey[]> {
  return Promise.all(
    policy.keys.map(async ({ secretRef }) => {
      const key = secretRef.key ?? 'cosign.pub';
      const { value, where } = await secretEntry(rest, namespace, secretRef.name, key, 'signature policy key');
      try {
        // A private key would yield its public half; refuse it so nobody stores a private key here by mistake.
        if (/PRIVATE KEY/.test(value))
          throw new Error('it holds a private key; store the public key (cosign.pub) instead');
        return { name: `${secretRef.name}/${key}`, key: createPublicKey(value) };
      } catch (e) {
        throw new CredentialsError(
          'CredentialsInvalid',
          `${where} key "${key}" is not a PEM public key: ${(e as Error).message.split('\n')[0]}`,
        );
      }
    }),
  );
}

/** The private key promotion attestations are signed with, from its Secret in `namespace`. */
export async function signingKey(
  rest: Rest,
  namespace: string,
  ref: { name: string; key?: string },
): Promise<SigningKey> {
  const key = ref.key ?? 'key.pem';
  const { value, where } = await secretEntry(rest, namespace, ref.name, key, 'promotion attestation signing key');
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(value);
  } catch {
    // Never echo the parser's message: it may quote the Secret's content.
    throw new CredentialsError(
      'CredentialsInvalid',
      `${where} key "${key}" is not an unencrypted PEM private key (PKCS#8: openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256)`,
    );
  }
  const kind = privateKey.asymmetricKeyType;
  const curve = privateKey.asymmetricKeyDetails?.namedCurve;
  if (!(kind === 'ed25519' || (kind === 'ec' && (curve === 'prime256v1' || curve === 'secp384r1'))))
    throw new CredentialsError(
      'CredentialsInvalid',
      `${where} key "${key}" is ${kind}${curve ? ` (${curve})` : ''}; use ECDSA P-256, P-384 or Ed25519`,
    );
  const publicKeyPem = createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString();
  return { name: `${ref.name}/${key}`, privateKey, publicKeyPem };
}
