import { type Static, Type } from '@sinclair/typebox';
import { Name, SecretKeyRef, StringEnum } from '../schemaHelpers.js';

/** in-toto predicate type of the attestation kpromo signs for every promoted digest. */
export const PROMOTION_PREDICATE_TYPE = 'https://kpromo.dev/promotion/v1';
/** Predicate type of cosign 3's image signatures (an in-toto statement in a Sigstore bundle). */
export const COSIGN_SIGN_PREDICATE_TYPE = 'https://sigstore.dev/cosign/sign/v1';

const keyRef = (description: string) => Type.Object(SecretKeyRef.properties, { description });

/**
 * Where key Secrets of the flow's own namespace used to be named. Kept in the schema only so a flow
 * stored before trust anchors moved out of tenant namespaces still shows it (pruning would drop it
 * silently) and the controller can refuse it with the way to migrate; admission refuses new ones.
 */
const LEGACY_KEY_REF =
  'Removed: a Secret of the flow\'s own namespace is no longer trusted (whoever can write Secrets there could swap the key). Refused; name a key the platform configured instead (docs/supply-chain.md, "Migrating from keys in the flow\'s namespace").';
const MIGRATE = 'see docs/supply-chain.md, "Migrating from keys in the flow\'s namespace"';

export const SignaturePolicy = Type.Object(
  {
    mode: Type.Optional(
      StringEnum(['Enforce', 'Audit'] as const, {
        default: 'Enforce',
        description:
          'Enforce: an image that fails the policy is not copied and its app fails. Audit: the result is recorded and shown, nothing is refused.',
      }),
    ),
    keys: Type.Array(
      Type.Object(
        {
          name: Type.Optional(
            Name(
              "A trusted key the platform configured for this namespace (controller config supplyChain.trustedKeys[].name): a public key in the controller's namespace, out of tenants' reach.",
            ),
          ),
          secretRef: Type.Optional(keyRef(LEGACY_KEY_REF)),
        },
        {
          'x-kubernetes-validations': [
            {
              rule: '!has(self.secretRef)',
              message: `keys[].secretRef (a Secret of the flow's namespace) is no longer trusted: ask the platform admin to configure the key in the controller config supplyChain.trustedKeys and name it here as keys[].name; ${MIGRATE}`,
            },
            { rule: 'has(self.name)', message: 'keys[].name: name a trusted key the platform configured' },
          ],
        },
      ),
      {
        minItems: 1,
        maxItems: 16,
        description:
          'Trusted public keys; a signature by any one of them counts. List the old and the new key while rotating.',
      },
    ),
    requireSignature: Type.Optional(
      Type.Boolean({
        default: true,
        description:
          'The image digest must carry a cosign signature (predicate https://sigstore.dev/cosign/sign/v1) by a trusted key.',
      }),
    ),
    attestations: Type.Optional(
      Type.Array(
        Type.Object({
          predicateType: Type.String({
            minLength: 1,
            maxLength: 256,
            description: 'in-toto predicate type, e.g. https://slsa.dev/provenance/v1 or https://spdx.dev/Document.',
          }),
        }),
        {
          maxItems: 16,
          description: 'Attestations the image digest must carry, each signed by a trusted key.',
        },
      ),
    ),
  },
  {
    description:
      'Signatures and attestations a source image digest must carry before it is copied. Verified offline against the registry (Sigstore bundles attached as OCI referrers, as cosign 3 writes them); no transparency log is consulted.',
  },
);

export const PromotionAttestation = Type.Object(
  {
    signingKey: Type.Optional(
      Name(
        "The signing key the platform configured for this namespace (controller config supplyChain.signingKeys[].name): a private key in the controller's namespace, which tenants cannot read.",
      ),
    ),
    signingKeySecretRef: Type.Optional(keyRef(LEGACY_KEY_REF)),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: '!has(self.signingKeySecretRef)',
        message: `promotionAttestation.signingKeySecretRef (a Secret of the flow's namespace) is no longer used: ask the platform admin to configure the key in the controller config supplyChain.signingKeys and name it here as signingKey; ${MIGRATE}`,
      },
      {
        rule: 'has(self.signingKey)',
        message: 'promotionAttestation.signingKey: name a signing key the platform configured',
      },
    ],
    description:
      'Sign an in-toto statement (predicate https://kpromo.dev/promotion/v1: plan, flow, from -> to, references, approvers) for every promoted digest and attach it in the target registry as a Sigstore bundle referrer.',
  },
);

export const SignatureCheck = Type.Object({
  predicateType: Type.String(),
  verified: Type.Boolean(),
  /** Which trusted key signed it: its configured name (supplyChain.trustedKeys[].name). */
  signedBy: Type.Optional(Type.String()),
  message: Type.Optional(Type.String({ maxLength: 1024 })),
});

export const SignatureState = Type.Object(
  {
    digest: Type.String(),
    verdict: StringEnum(['Verified', 'Unsigned', 'Invalid', 'Error'] as const),
    mode: StringEnum(['Enforce', 'Audit'] as const),
    checks: Type.Array(SignatureCheck, { maxItems: 32 }),
    message: Type.String({ maxLength: 2048 }),
    checkedAt: Type.String({ format: 'date-time' }),
  },
  { description: "Result of the stage's signature policy for this digest." },
);

export const AttestationRecord = Type.Object(
  {
    predicateType: Type.String(),
    /** Digest of the referrer manifest holding the signed bundle in the target repository. */
    manifestDigest: Type.String(),
    signedBy: Type.String(),
  },
  { description: 'The promotion attestation kpromo signed and attached to the promoted digest.' },
);

export type SignaturePolicy = Static<typeof SignaturePolicy>;
export type PromotionAttestation = Static<typeof PromotionAttestation>;
export type SignatureCheck = Static<typeof SignatureCheck>;
export type SignatureState = Static<typeof SignatureState>;
export type AttestationRecord = Static<typeof AttestationRecord>;
