import { COSIGN_SIGN_PREDICATE_TYPE, PROMOTION_PREDICATE_TYPE } from '@kpromo/api';
import { getManifest } from '../oci/copyImage.js';
import type { RegistryClient } from '../oci/registryClient.js';
import type { PromotionPredicate } from './attestation.js';
import { evidenceAbout } from './check.js';
import type { TrustedKey } from './keys.js';

/** SLSA provenance predicate types whose builder `kpromo verify` reports. */
const PROVENANCE = new Set(['https://slsa.dev/provenance/v1', 'https://slsa.dev/provenance/v0.2']);

/** What `kpromo verify` found about one image digest. */
export interface ImageReport {
  image: string;
  digest: string;
  /** Promotion attestations that verify with the promotion keys, oldest move first. */
  promotions: Array<{ manifestDigest: string; signedBy: string; predicate: PromotionPredicate }>;
  /** Signatures and attestations that verify with the signature keys (the build's evidence). */
  evidence: Array<{ predicateType: string; signedBy: string; builder?: string }>;
  /** Bundles that did not verify, and why (tampered, another key, another image). */
  rejected: Array<{ manifestDigest: string; predicateType?: string; problem: string }>;
}

/**
 * Reads every Sigstore bundle attached to an image and sorts it: promotion attestations verified
 * with `promotionKeys`, build signatures and attestations (provenance, SBOM) verified with
 * `signatureKeys`, and what verified with neither. A tag is resolved to its digest first.
 */
export async function verifyImage(
  client: RegistryClient,
  repository: string,
  reference: string,
  promotionKeys: TrustedKey[],
  signatureKeys: TrustedKey[],
): Promise<ImageReport> {
  // A statement's role is decided by the name of the key that verified it: two keys under one name
  // would let a build key vouch for promotions (kpromo verify names keys by fingerprint for this).
  const names = [...promotionKeys, ...signatureKeys].map((k) => k.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined)
    throw new Error(`verifyImage: two keys are both named ${JSON.stringify(twice)}; name each key once`);
  const { digest } = await getManifest(client, repository, reference);
  const image = `${client.endpoint.host}/${repository}@${digest}`;
  const found = await evidenceAbout(client, repository, digest, [...promotionKeys, ...signatureKeys]);
  const promoters = new Set(promotionKeys.map((k) => k.name));
  const report: ImageReport = { image, digest, promotions: [], evidence: [], rejected: [] };
  for (const b of found) {
    if (!b.ok) {
      report.rejected.push({
        manifestDigest: b.manifestDigest,
        ...(b.predicateType ? { predicateType: b.predicateType } : {}),
        problem: b.problem,
      });
      continue;
    }
    if (b.predicateType === PROMOTION_PREDICATE_TYPE && promoters.has(b.signedBy)) {
      report.promotions.push({
        manifestDigest: b.manifestDigest,
        signedBy: b.signedBy,
        predicate: b.statement.predicate as PromotionPredicate,
      });
    } else if (b.predicateType !== PROMOTION_PREDICATE_TYPE && !promoters.has(b.signedBy)) {
      const builder = PROVENANCE.has(b.predicateType) ? builderOf(b.statement.predicate) : undefined;
      report.evidence.push({ predicateType: b.predicateType, signedBy: b.signedBy, ...(builder ? { builder } : {}) });
    } else {
      report.rejected.push({
        manifestDigest: b.manifestDigest,
        predicateType: b.predicateType,
        problem: `signed by ${b.signedBy}, which is not a key for this kind of statement`,
      });
    }
  }
  // Image signatures first, then attestations by type: the same report whatever order the registry lists.
  report.evidence.sort(
    (a, b) =>
      Number(isImageSignature(b.predicateType)) - Number(isImageSignature(a.predicateType)) ||
      a.predicateType.localeCompare(b.predicateType) ||
      a.signedBy.localeCompare(b.signedBy),
  );
  report.promotions.sort((a, b) => a.predicate.promotedAt.localeCompare(b.predicate.promotedAt));
  return report;
}

/** The builder id of SLSA provenance v1 (runDetails.builder.id) or v0.2 (builder.id). */
function builderOf(p: unknown): string | undefined {
  const v = p as { runDetails?: { builder?: { id?: unknown } }; builder?: { id?: unknown } } | undefined;
  const id = v?.runDetails?.builder?.id ?? v?.builder?.id;
  return typeof id === 'string' ? id : undefined;
}

export const isImageSignature = (t: string) => t === COSIGN_SIGN_PREDICATE_TYPE;
