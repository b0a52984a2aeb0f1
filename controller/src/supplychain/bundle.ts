import { sign } from 'node:crypto';
import { bundleFromJSON, bundleToJSON, type SerializedBundle } from '@sigstore/bundle';
import { DSSEBundleBuilder, type Signer } from '@sigstore/sign';
import { toSignedEntity, toTrustMaterial, Verifier } from '@sigstore/verify';
import type { SigningKey, TrustedKey } from './keys.js';

/** Media type of a Sigstore bundle v0.3, cosign 3's artifactType for signatures and attestations. */
export const SIGSTORE_BUNDLE_V03 = 'application/vnd.dev.sigstore.bundle.v0.3+json';
export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';
/** A bundle is a few KiB; anything far larger is not one (a bound on what an attacker makes us read). */
export const MAX_BUNDLE_BYTES = 1024 * 1024;

/** An in-toto Statement v1 as far as kpromo reads it. */
export interface Statement {
  _type: string;
  subject: Array<{ name?: string; digest: Record<string, string> }>;
  predicateType: string;
  predicate?: unknown;
}

/** What one bundle proves about an image, or why it proves nothing. */
export type BundleVerdict =
  | { ok: true; predicateType: string; signedBy: string; statement: Statement }
  | { ok: false; predicateType?: string; problem: string };

// No Fulcio CA, transparency log or timestamp authority is trusted: only the keys given. The
// signature is checked offline; the bundle's own claims (tlog entries, timestamps) are not needed.
const EMPTY_ROOT = {
  mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
  tlogs: [],
  certificateAuthorities: [],
  ctlogs: [],
  timestampAuthorities: [],
} as unknown as Parameters<typeof toTrustMaterial>[0];
const OFFLINE = { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 };

/**
 * Pure: the in-toto statement a DSSE envelope carries, and that it is about `digest`: the checks
 * every signed statement passes before its signature is looked at (cosign 3 bundles and cosign 2
 * `.att` envelopes alike).
 */
export function statementAbout(
  envelope: { payloadType: string; payload: Buffer },
  digest: string,
): { ok: true; statement: Statement; predicateType: string } | { ok: false; predicateType?: string; problem: string } {
  if (envelope.payloadType !== IN_TOTO_PAYLOAD_TYPE)
    return { ok: false, problem: `DSSE payload type is ${envelope.payloadType}, not ${IN_TOTO_PAYLOAD_TYPE}` };
  let statement: Statement;
  try {
    statement = JSON.parse(envelope.payload.toString('utf8'));
  } catch {
    return { ok: false, problem: 'the signed payload is not JSON' };
  }
  const predicateType = typeof statement?.predicateType === 'string' ? statement.predicateType : undefined;
  if (!predicateType || !Array.isArray(statement.subject))
    return { ok: false, problem: 'the signed payload is not an in-toto statement' };
  const [alg, hex] = digest.split(':');
  if (!statement.subject.some((s) => s?.digest?.[alg] === hex))
    return { ok: false, predicateType, problem: `signed for another image, not ${digest}` };
  return { ok: true, statement, predicateType };
}

/**
 * Pure: verifies a Sigstore bundle holding a DSSE-signed in-toto statement (what `cosign sign` and
 * `cosign attest` 3.x attach) against trusted keys, and that the statement is about `digest`.
 * The predicate type is read from the signed payload, never from registry annotations.
 */
export function verifyBundle(json: unknown, digest: string, keys: TrustedKey[]): BundleVerdict {
  let bundle: ReturnType<typeof bundleFromJSON>;
  try {
    bundle = bundleFromJSON(json);
  } catch (e) {
    return { ok: false, problem: `not a valid Sigstore bundle (${(e as Error).message})` };
  }
  if (bundle.content.$case !== 'dsseEnvelope')
    return { ok: false, problem: 'a message signature, not a signed in-toto statement (sign with cosign 3)' };
  const about = statementAbout(bundle.content.dsseEnvelope, digest);
  if (!about.ok) return about;
  const { statement, predicateType } = about;
  const entity = toSignedEntity(bundle);
  for (const k of keys) {
    const material = toTrustMaterial(EMPTY_ROOT, () => ({ publicKey: k.key, validFor: () => true }));
    try {
      new Verifier(material, OFFLINE).verify(entity);
      return { ok: true, predicateType, signedBy: k.name, statement };
    } catch {
      // Not this key; the next one may have signed it (key rotation lists several).
    }
  }
  return {
    ok: false,
    predicateType,
    problem:
      bundle.verificationMaterial.content.$case === 'certificate' ||
      bundle.verificationMaterial.content.$case === 'x509CertificateChain'
        ? 'signed keyless (Fulcio certificate); this policy trusts keys only'
        : `not signed by a trusted key (${keys.map((k) => k.name).join(', ')})`,
  };
}

/** Signs an in-toto statement as a DSSE envelope in a Sigstore bundle v0.3 (no log, no certificate). */
export async function signStatement(statement: Statement, key: SigningKey): Promise<SerializedBundle> {
  const signer: Signer = {
    sign: async (data) => ({
      // ECDSA P-256 with SHA-256 (what cosign and sigstore verify), Ed25519 with none.
      signature: sign(key.privateKey.asymmetricKeyType === 'ed25519' ? null : 'sha256', data, key.privateKey),
      // No hint: @sigstore/bundle would also write it as the DSSE signature's keyid, and DSSE
      // verifiers (cosign's among them) skip a signature whose keyid is not their key's fingerprint.
      key: { $case: 'publicKey', publicKey: key.publicKeyPem },
    }),
  };
  const builder = new DSSEBundleBuilder({ signer, witnesses: [] });
  const bundle = await builder.create({ data: Buffer.from(JSON.stringify(statement)), type: IN_TOTO_PAYLOAD_TYPE });
  return bundleToJSON(bundle);
}
