import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import type { PromotionAttestation, SignaturePolicy } from '@kpromo/api';
import { CredentialsError, readSecretObject } from '../credentials/secrets.js';
import type { KubeRest } from '../kube/rest.js';
import {
  resolveTrustAnchor,
  type SupplyChainConfig,
  type TrustAnchor,
  type TrustAnchorKind,
  type TrustAnchorRefusalReason,
} from './trustAnchors.js';

/** A public key a signature policy trusts, named by where it came from (for messages and status). */
export interface TrustedKey {
  /** The configured name (supplyChain.trustedKeys[].name) of the key that verified a signature. */
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

/** A flow names a key it may not use (or a Secret of its own namespace): the flow writer's or the platform admin's to fix. */
export class TrustAnchorError extends Error {
  override name = 'TrustAnchorError';
  constructor(
    readonly reason: TrustAnchorRefusalReason,
    message: string,
  ) {
    super(message);
  }
}

/** What a flow names at `field`, resolved against the platform's configuration, else a TrustAnchorError. */
function anchorFor(
  config: SupplyChainConfig | undefined,
  kind: TrustAnchorKind,
  namespace: string,
  flow: string,
  field: string,
  ref: { name?: string; secretRef?: { name: string } },
) {
  const d = resolveTrustAnchor(config, kind, namespace, flow, field, ref);
  if (!d.ok) throw new TrustAnchorError(d.reason, d.message);
  return d;
}

/**
 * One entry of a key Secret in the controller's namespace. The platform config named it, which is
 * the opt-in (no credential label needed); a problem is the platform admin's to fix.
 */
async function anchorEntry(rest: Rest, namespace: string, anchor: TrustAnchor, kind: TrustAnchorKind) {
  const s = await readSecretObject(rest, namespace, anchor.secret);
  const where = `Secret ${namespace}/${anchor.secret} (supplyChain.${kind} ${anchor.name})`;
  if (!s) throw new CredentialsError('CredentialsNotFound', `${where} not found; a platform admin must create it`);
  const value = s.data[anchor.key];
  if (value === undefined) throw new CredentialsError('CredentialsInvalid', `${where} has no key "${anchor.key}"`);
  return { value, where };
}

/**
 * The public keys a signature policy of a flow in `namespace` lists, by the names the platform
 * configured (supplyChain.trustedKeys), read from the controller's namespace. `field` is where the
 * policy sits in the flow (signaturePolicy or stages[i].signaturePolicy), for messages.
 */
export async function trustedKeys(
  rest: Rest,
  config: SupplyChainConfig | undefined,
  namespace: string,
  flow: string,
  field: string,
  policy: SignaturePolicy,
): Promise<TrustedKey[]> {
  // Every name is checked before any Secret is read: a refusal never depends on what a Secret holds.
  const anchors = policy.keys.map((k, i) =>
    anchorFor(config, 'trustedKeys', namespace, flow, `${field}.keys[${i}].${k.secretRef ? 'secretRef' : 'name'}`, k),
  );
  return Promise.all(
    anchors.map(async ({ namespace: home, anchor }) => {
      const { value, where } = await anchorEntry(rest, home, anchor, 'trustedKeys');
      try {
        // A private key would yield its public half; refuse it so nobody stores a private key here by mistake.
        if (/PRIVATE KEY/.test(value))
          throw new Error('it holds a private key; store the public key (cosign.pub) instead');
        return { name: anchor.name, key: createPublicKey(value) };
      } catch (e) {
        throw new CredentialsError(
          'CredentialsInvalid',
          `${where} key "${anchor.key}" is not a PEM public key: ${(e as Error).message.split('\n')[0]}`,
        );
      }
    }),
  );
}

/** The signing key a flow in `namespace` names (supplyChain.signingKeys), checked without reading it. */
export function signingAnchor(
  config: SupplyChainConfig | undefined,
  namespace: string,
  flow: string,
  ref: PromotionAttestation,
) {
  return anchorFor(
    config,
    'signingKeys',
    namespace,
    flow,
    ref.signingKeySecretRef ? 'promotionAttestation.signingKeySecretRef' : 'promotionAttestation.signingKey',
    { name: ref.signingKey, secretRef: ref.signingKeySecretRef },
  );
}

/** The private key promotion attestations of a flow in `namespace` are signed with, from the controller's namespace. */
export async function signingKey(
  rest: Rest,
  config: SupplyChainConfig | undefined,
  namespace: string,
  flow: string,
  ref: PromotionAttestation,
): Promise<SigningKey> {
  const { namespace: home, anchor } = signingAnchor(config, namespace, flow, ref);
  const key = anchor.key;
  const { value, where } = await anchorEntry(rest, home, anchor, 'signingKeys');
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
  return { name: anchor.name, privateKey, publicKeyPem };
}
