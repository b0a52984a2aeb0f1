import { verify } from 'node:crypto';
import { COSIGN_SIGN_PREDICATE_TYPE } from '@kpromo/api';
import { envelopeFromJSON } from '@sigstore/bundle';
import { dsse } from '@sigstore/core';
import { getManifest } from '../oci/copyImage.js';
import { OciError } from '../oci/errors.js';
import { parseManifest } from '../oci/manifest.js';
import { digestTag, readSmallBlob } from '../oci/referrers.js';
import type { RegistryClient } from '../oci/registryClient.js';
import { type BundleVerdict, MAX_BUNDLE_BYTES, statementAbout } from './bundle.js';
import type { TrustedKey } from './keys.js';

/** cosign 2's (and `--new-bundle-format=false`'s) media types in the `.sig` and `.att` tags. */
const SIMPLE_SIGNING = 'application/vnd.dev.cosign.simplesigning.v1+json';
const DSSE_ENVELOPE = 'application/vnd.dsse.envelope.v1+json';
const SIGNATURE_ANNOTATION = 'dev.cosignproject.cosign/signature';
/** Layers read per tag: a bound on work an attacker's image can cause. */
const MAX_LAYERS = 32;

type Found = BundleVerdict & { manifestDigest: string };

/** A signature over `bytes` by one of `keys` (ECDSA with SHA-256, Ed25519 with none), or undefined. */
function signer(bytes: Buffer, sig: Buffer, keys: TrustedKey[]): string | undefined {
  for (const k of keys) {
    try {
      if (verify(k.key.asymmetricKeyType === 'ed25519' ? null : 'sha256', bytes, k.key, sig)) return k.name;
    } catch {
      // Not a key of this type for this signature.
    }
  }
  return undefined;
}

const notTrusted = (keys: TrustedKey[]) => `not signed by a trusted key (${keys.map((k) => k.name).join(', ')})`;

/**
 * Pure: one simple-signing layer of a `.sig` tag. The signed payload must name `digest` (so a
 * signature of another image copied under this tag is refused) and verify with a trusted key.
 */
export function verifySimpleSigning(
  payload: Buffer,
  signatureB64: string | undefined,
  digest: string,
  keys: TrustedKey[],
): BundleVerdict {
  const predicateType = COSIGN_SIGN_PREDICATE_TYPE;
  let doc: { critical?: { image?: { 'docker-manifest-digest'?: string }; type?: string } };
  try {
    doc = JSON.parse(payload.toString('utf8'));
  } catch {
    return { ok: false, predicateType, problem: 'the signed payload is not JSON' };
  }
  if (doc.critical?.type !== 'cosign container image signature')
    return { ok: false, predicateType, problem: 'not a cosign container image signature' };
  if (doc.critical.image?.['docker-manifest-digest'] !== digest)
    return { ok: false, predicateType, problem: `signed for another image, not ${digest}` };
  if (!signatureB64) return { ok: false, predicateType, problem: `no ${SIGNATURE_ANNOTATION} annotation` };
  const by = signer(payload, Buffer.from(signatureB64, 'base64'), keys);
  if (!by) return { ok: false, predicateType, problem: notTrusted(keys) };
  const [alg, hex] = digest.split(':');
  return {
    ok: true,
    predicateType,
    signedBy: by,
    statement: { _type: 'cosign/simplesigning', subject: [{ digest: { [alg]: hex } }], predicateType },
  };
}

/** Pure: one DSSE envelope layer of an `.att` tag: an in-toto statement about `digest`, signed by a trusted key. */
export function verifyLegacyAttestation(json: unknown, digest: string, keys: TrustedKey[]): BundleVerdict {
  let env: ReturnType<typeof envelopeFromJSON>;
  try {
    env = envelopeFromJSON(json);
  } catch (e) {
    return { ok: false, problem: `not a DSSE envelope (${(e as Error).message})` };
  }
  const about = statementAbout(env, digest);
  if (!about.ok) return about;
  const { statement, predicateType } = about;
  const pae = dsse.preAuthEncoding(env.payloadType, env.payload);
  for (const s of env.signatures) {
    const by = signer(pae, s.sig, keys);
    if (by) return { ok: true, predicateType, signedBy: by, statement };
  }
  return { ok: false, predicateType, problem: notTrusted(keys) };
}

/**
 * cosign's tag scheme (`sha256-<hex>.sig` and `.att`, what cosign 2 writes and cosign 3 with
 * `--new-bundle-format=false`): each signature and attestation layer verified against the keys.
 * No tag, no verdicts. Keyless signatures (a certificate annotation) do not verify with keys.
 */
export async function legacyEvidenceAbout(
  client: RegistryClient,
  repository: string,
  digest: string,
  keys: TrustedKey[],
  signal?: AbortSignal,
): Promise<Found[]> {
  const out: Found[] = [];
  for (const suffix of ['sig', 'att'] as const) {
    const m = await getManifest(client, repository, `${digestTag(digest)}.${suffix}`, signal).catch((e: unknown) => {
      if (e instanceof OciError && e.code === 'NOT_FOUND') return undefined;
      throw e;
    });
    if (!m) continue;
    const parsed = parseManifest(m.bytes, m.mediaType);
    if (parsed.kind !== 'image') continue;
    const layers =
      (
        JSON.parse(Buffer.from(m.bytes).toString('utf8')) as {
          layers?: Array<{ mediaType?: string; digest: string; size: number; annotations?: Record<string, string> }>;
        }
      ).layers ?? [];
    for (const layer of layers.slice(0, MAX_LAYERS)) {
      const want = suffix === 'sig' ? SIMPLE_SIGNING : DSSE_ENVELOPE;
      if (layer.mediaType !== want) continue;
      let bytes: Buffer;
      try {
        bytes = Buffer.from(await readSmallBlob(client, repository, layer, MAX_BUNDLE_BYTES, signal));
      } catch (e) {
        if ((e as { code?: string }).code === 'UNAVAILABLE') throw e;
        out.push({
          ok: false,
          problem: `${suffix} layer ${layer.digest}: ${(e as Error).message}`,
          manifestDigest: m.digest,
        });
        continue;
      }
      let verdict: BundleVerdict;
      if (suffix === 'sig')
        verdict = verifySimpleSigning(bytes, layer.annotations?.[SIGNATURE_ANNOTATION], digest, keys);
      else {
        try {
          verdict = verifyLegacyAttestation(JSON.parse(bytes.toString('utf8')), digest, keys);
        } catch {
          verdict = { ok: false, problem: 'attestation layer is not JSON' };
        }
      }
      out.push({ ...verdict, manifestDigest: m.digest });
    }
  }
  return out;
}
