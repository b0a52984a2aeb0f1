import type { SignaturePolicy, SignatureState } from '@kpromo/api';
import { getManifest } from '../oci/copyImage.js';
import { parseManifest } from '../oci/manifest.js';
import { listReferrers, readSmallBlob, SIGSTORE_BUNDLE_TYPE } from '../oci/referrers.js';
import type { RegistryClient } from '../oci/registryClient.js';
import { type BundleVerdict, MAX_BUNDLE_BYTES, SIGSTORE_BUNDLE_V03, verifyBundle } from './bundle.js';
import type { TrustedKey } from './keys.js';
import { legacyEvidenceAbout } from './legacy.js';
import { judgeSignatures } from './policy.js';

/** Bundle manifests read per image (each also reads a blob of up to MAX_BUNDLE_BYTES). */
export const MAX_BUNDLES_READ = 64;
/** The manifestDigest of the verdict standing for the bundles past MAX_BUNDLES_READ. */
const UNREAD = '(not read)';

/**
 * Every Sigstore bundle attached to `digest` in `repository` (OCI referrers, or the fallback
 * referrers index), each verified against the trusted keys. Registry errors propagate (they are
 * transient or the Environment's to fix); a malformed bundle is a verdict, not an error.
 */
export async function bundlesAbout(
  client: RegistryClient,
  repository: string,
  digest: string,
  keys: TrustedKey[],
  signal?: AbortSignal,
): Promise<Array<BundleVerdict & { manifestDigest: string; annotations?: Record<string, string> }>> {
  const { referrers, truncated } = await listReferrers(client, repository, digest, signal);
  const out: Array<BundleVerdict & { manifestDigest: string; annotations?: Record<string, string> }> = [];
  // Other artifact types are skipped unread, so junk of another type costs nothing. Those that say
  // they are bundles come first, then untyped ones (a fallback index may omit the type); at most
  // MAX_BUNDLES_READ manifests are read, the rest named in a verdict.
  const typed = referrers.filter((r) => r.artifactType?.startsWith(SIGSTORE_BUNDLE_TYPE));
  const candidates = [...typed, ...referrers.filter((r) => !r.artifactType)];
  if (candidates.length > MAX_BUNDLES_READ || truncated)
    out.push({
      ok: false,
      problem: `${Math.max(candidates.length - MAX_BUNDLES_READ, 0)}${truncated ? '+' : ''} more referrer(s) that may be Sigstore bundles not read (kpromo reads ${MAX_BUNDLES_READ} per image); prune the junk referrers of ${digest}`,
      manifestDigest: UNREAD,
    });
  for (const r of candidates.slice(0, MAX_BUNDLES_READ)) {
    // The index's artifactType is the registry's copy; the manifest decides.
    const m = await getManifest(client, repository, r.digest, signal);
    const doc = JSON.parse(Buffer.from(m.bytes).toString('utf8')) as {
      artifactType?: string;
      config?: { mediaType?: string };
      annotations?: Record<string, string>;
    };
    const type = doc.artifactType ?? doc.config?.mediaType ?? '';
    if (!type.startsWith(SIGSTORE_BUNDLE_TYPE)) continue;
    const parsed = parseManifest(m.bytes, m.mediaType);
    const layer =
      parsed.kind === 'image'
        ? parsed.blobs.find((b) => b.mediaType === type || b.mediaType === SIGSTORE_BUNDLE_V03)
        : undefined;
    if (!layer) {
      out.push({ ok: false, problem: `referrer ${r.digest} has no bundle layer`, manifestDigest: r.digest });
      continue;
    }
    let json: unknown;
    try {
      json = JSON.parse(
        Buffer.from(await readSmallBlob(client, repository, layer, MAX_BUNDLE_BYTES, signal)).toString('utf8'),
      );
    } catch (e) {
      if ((e as { code?: string }).code === 'UNAVAILABLE') throw e;
      out.push({ ok: false, problem: `referrer ${r.digest}: ${(e as Error).message}`, manifestDigest: r.digest });
      continue;
    }
    out.push({ ...verifyBundle(json, digest, keys), manifestDigest: r.digest, annotations: doc.annotations });
  }
  return out;
}

/**
 * Everything the registry holds about `digest` that a key can vouch for: Sigstore bundles among
 * its referrers (cosign 3) and cosign's `.sig`/`.att` tags (cosign 2), each verified.
 */
export async function evidenceAbout(
  client: RegistryClient,
  repository: string,
  digest: string,
  keys: TrustedKey[],
  signal?: AbortSignal,
): Promise<Array<BundleVerdict & { manifestDigest: string }>> {
  return [
    ...(await bundlesAbout(client, repository, digest, keys, signal)),
    ...(await legacyEvidenceAbout(client, repository, digest, keys, signal)),
  ];
}

/** Checks `digest` in `repository` against a signature policy: what the registry holds, judged. */
export async function checkSignatures(
  client: RegistryClient,
  repository: string,
  digest: string,
  policy: SignaturePolicy,
  keys: TrustedKey[],
  now: Date,
  signal?: AbortSignal,
): Promise<SignatureState> {
  const found = await evidenceAbout(client, repository, digest, keys, signal);
  const state = judgeSignatures(policy, digest, found, now);
  // Fails closed past the bound, saying why: the unread bundles may hold the one that verifies.
  const unread = found.find((f) => !f.ok && f.manifestDigest === UNREAD);
  if (state.verdict !== 'Verified' && unread && !unread.ok)
    state.message = `${state.message}; ${unread.problem}`.slice(0, 2048);
  return state;
}
