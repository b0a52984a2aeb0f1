import { type Descriptor, isDigest, MEDIA_TYPES, sha256Digest } from './manifest.js';
import type { RegistryClient } from './registryClient.js';

/** A referrer as listed: the descriptor of a manifest whose `subject` is the image. */
export interface ReferrerDescriptor extends Descriptor {
  artifactType?: string;
  annotations?: Record<string, string>;
}

/**
 * Bounds on work per image. Anyone who may push to a repository can attach referrers to its
 * digests, so their number must never block a copy or hide a signature: listing reads at most
 * {@link MAX_REFERRERS_READ} entries (over at most {@link MAX_REFERRER_PAGES} pages of the referrers
 * API) and stops there; the copy carries at most {@link MAX_EVIDENCE_COPIED}, Sigstore bundles
 * first, and counts what it leaves; signature checks skip other artifact types without reading them.
 */
export const MAX_REFERRERS_READ = 1024;
export const MAX_REFERRER_PAGES = 16;
export const MAX_EVIDENCE_COPIED = 128;
/** The artifact type prefix of Sigstore bundles (cosign 3 signatures and attestations, kpromo's own). */
export const SIGSTORE_BUNDLE_TYPE = 'application/vnd.dev.sigstore.bundle';

/** OCI's empty config blob (`{}`), the config of artifact manifests. */
const EMPTY_CONFIG = { mediaType: 'application/vnd.oci.empty.v1+json', bytes: new TextEncoder().encode('{}') };

/** `sha256:<hex>` as a tag: the OCI 1.1 fallback referrers index tag, and the stem of cosign's tags. */
export const digestTag = (digest: string) => digest.replace(':', '-');

/** The referrers of an image as listed, with whether the listing was cut at {@link MAX_REFERRERS_READ}. */
export interface ReferrerListing {
  /** The referrers API answered (else the fallback index, or nothing). */
  api: boolean;
  referrers: ReferrerDescriptor[];
  /** The fallback index as stored (absent with the API or when there is none). */
  fallback?: { bytes: Uint8Array; digest: string };
  /** The registry lists more than was read. */
  truncated: boolean;
}

/**
 * The referrers of `digest`: from the referrers API (following its `Link: <…>; rel="next"` pages on
 * the same registry), or, on a registry without it (CNCF distribution 3.1 has none), from OCI 1.1's
 * fallback index under the tag `sha256-<hex>`. `api` says which answered, so a writer knows whether
 * it must maintain the fallback index. Never fails because of how many there are: reading stops at
 * {@link MAX_REFERRERS_READ} entries with `truncated` set.
 */
export async function listReferrers(
  client: RegistryClient,
  repository: string,
  digest: string,
  signal?: AbortSignal,
): Promise<ReferrerListing> {
  const res = await client.request({
    method: 'GET',
    repository,
    path: `referrers/${digest}`,
    headers: { accept: MEDIA_TYPES.ociIndex },
    // Registries without the API answer 404 (the spec), some 400, 405 or 501.
    accept: [400, 404, 405, 501],
    signal,
  });
  if (res.status === 200) return { api: true, ...(await readPages(client, repository, digest, res, signal)) };
  await res.body?.cancel();
  const tag = await client.request({
    method: 'GET',
    repository,
    path: `manifests/${digestTag(digest)}`,
    headers: { accept: MEDIA_TYPES.ociIndex },
    accept: [404],
    signal,
  });
  if (tag.status === 404) {
    await tag.body?.cancel();
    return { api: false, referrers: [], truncated: false };
  }
  const bytes = new Uint8Array(await tag.arrayBuffer());
  const listed = parseIndex(client, repository, digest, Buffer.from(bytes).toString('utf8'));
  return {
    api: false,
    referrers: listed.slice(0, MAX_REFERRERS_READ),
    truncated: listed.length > MAX_REFERRERS_READ,
    fallback: { bytes, digest: sha256Digest(bytes) },
  };
}

/** The referrers API's answer and its next pages, up to the bounds. */
async function readPages(
  client: RegistryClient,
  repository: string,
  digest: string,
  first: Awaited<ReturnType<RegistryClient['request']>>,
  signal?: AbortSignal,
): Promise<{ referrers: ReferrerDescriptor[]; truncated: boolean }> {
  const out: ReferrerDescriptor[] = [];
  let res = first;
  for (let page = 1; ; page++) {
    out.push(...parseIndex(client, repository, digest, await res.text()));
    const next = nextPage(client, res.headers.get('link'));
    if (!next) return { referrers: out.slice(0, MAX_REFERRERS_READ), truncated: out.length > MAX_REFERRERS_READ };
    if (out.length >= MAX_REFERRERS_READ || page >= MAX_REFERRER_PAGES)
      return { referrers: out.slice(0, MAX_REFERRERS_READ), truncated: true };
    res = await client.request({
      method: 'GET',
      repository,
      path: next,
      headers: { accept: MEDIA_TYPES.ociIndex },
      signal,
    });
  }
}

/**
 * The `rel="next"` target of a Link header (RFC 8288) as an absolute URL on the registry itself, or
 * undefined. A next page on another origin is refused: the registry's credentials go to it alone.
 */
export function nextPage(client: Pick<RegistryClient, 'base' | 'error'>, link: string | null): string | undefined {
  if (!link) return undefined;
  for (const part of link.split(/,(?=\s*<)/)) {
    const m = /^\s*<([^>]*)>(.*)$/.exec(part);
    if (!m) continue;
    const rel = m[2]
      .split(';')
      .map((p) => p.trim().split('='))
      .find(([k]) => k.trim().toLowerCase() === 'rel')?.[1];
    if (!rel?.replace(/"/g, '').trim().toLowerCase().split(/\s+/).includes('next')) continue;
    const url = new URL(m[1], client.base);
    if (url.origin !== new URL(client.base).origin)
      throw client.error('PROTOCOL', '', `the referrers API's next page is on another host (${url.origin}); refused`);
    return url.toString();
  }
  return undefined;
}

function parseIndex(client: RegistryClient, repository: string, digest: string, text: string): ReferrerDescriptor[] {
  let index: { manifests?: ReferrerDescriptor[] };
  try {
    index = JSON.parse(text);
  } catch (err) {
    throw client.error('PROTOCOL', repository, `referrers of ${digest}: ${(err as Error).message}`);
  }
  return (Array.isArray(index.manifests) ? index.manifests : []).filter(
    (d) => typeof d?.digest === 'string' && isDigest(d.digest),
  );
}

/**
 * Which referrers the copy carries when there are more than it may: Sigstore bundles first (what
 * signature policies verify in the target), then the others in the order listed. Pure.
 */
export function evidenceToCopy(
  referrers: readonly ReferrerDescriptor[],
  max = MAX_EVIDENCE_COPIED,
): { copy: ReferrerDescriptor[]; skipped: number } {
  if (referrers.length <= max) return { copy: [...referrers], skipped: 0 };
  const sigstore = (d: ReferrerDescriptor) => d.artifactType?.startsWith(SIGSTORE_BUNDLE_TYPE) ?? false;
  const copy = [...referrers.filter(sigstore), ...referrers.filter((d) => !sigstore(d))].slice(0, max);
  return { copy, skipped: referrers.length - copy.length };
}

/** Reads a blob whole, refusing anything larger than `maxBytes` and checking its digest. */
export async function readSmallBlob(
  client: RegistryClient,
  repository: string,
  d: Descriptor,
  maxBytes: number,
  signal?: AbortSignal,
): Promise<Uint8Array> {
  if (d.size > maxBytes)
    throw client.error(
      'PROTOCOL',
      repository,
      `blob ${d.digest} is ${d.size} bytes, more than the ${maxBytes} expected`,
    );
  const res = await client.request({ method: 'GET', repository, path: `blobs/${d.digest}`, signal });
  const bytes = new Uint8Array(await res.arrayBuffer());
  if (bytes.byteLength > maxBytes || sha256Digest(bytes) !== d.digest)
    throw client.error('DIGEST_MISMATCH', repository, `blob ${d.digest} does not hash to its digest`);
  return bytes;
}

/**
 * Attaches an artifact to `subject` as an OCI 1.1 referrer: uploads the empty config and the layer,
 * pushes the artifact manifest by digest and, on a registry without the referrers API, adds it to
 * the fallback index under `sha256-<hex>` (as oras and cosign do) so other tools find it.
 * Returns the artifact manifest's digest. Idempotent: the same bytes give the same digest.
 */
export async function attachReferrer(
  client: RegistryClient,
  repository: string,
  subject: Descriptor & { mediaType: string },
  artifact: {
    artifactType: string;
    layer: { mediaType: string; bytes: Uint8Array };
    annotations?: Record<string, string>;
  },
  signal?: AbortSignal,
): Promise<string> {
  const config = await pushBlob(client, repository, EMPTY_CONFIG.bytes, signal);
  const layer = await pushBlob(client, repository, artifact.layer.bytes, signal);
  const manifest = {
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.ociManifest,
    artifactType: artifact.artifactType,
    config: { mediaType: EMPTY_CONFIG.mediaType, digest: config, size: EMPTY_CONFIG.bytes.byteLength },
    layers: [{ mediaType: artifact.layer.mediaType, digest: layer, size: artifact.layer.bytes.byteLength }],
    subject: { mediaType: subject.mediaType, digest: subject.digest, size: subject.size },
    ...(artifact.annotations ? { annotations: artifact.annotations } : {}),
  };
  const bytes = new TextEncoder().encode(JSON.stringify(manifest));
  const digest = sha256Digest(bytes);
  await putManifestBytes(client, repository, digest, MEDIA_TYPES.ociManifest, bytes, signal);
  const listed = await listReferrers(client, repository, subject.digest, signal);
  if (listed.api || listed.referrers.some((r) => r.digest === digest)) return digest;
  // Everything the index lists stays listed, also beyond what listReferrers reads.
  const kept = listed.fallback
    ? parseIndex(client, repository, subject.digest, Buffer.from(listed.fallback.bytes).toString('utf8'))
    : [];
  if (kept.some((r) => r.digest === digest)) return digest;
  const index = {
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.ociIndex,
    manifests: [
      ...kept,
      {
        mediaType: MEDIA_TYPES.ociManifest,
        digest,
        size: bytes.byteLength,
        artifactType: artifact.artifactType,
        ...(artifact.annotations ? { annotations: artifact.annotations } : {}),
      },
    ],
  };
  const indexBytes = new TextEncoder().encode(JSON.stringify(index));
  await putManifestBytes(client, repository, digestTag(subject.digest), MEDIA_TYPES.ociIndex, indexBytes, signal);
  return digest;
}

async function pushBlob(client: RegistryClient, repository: string, bytes: Uint8Array, signal?: AbortSignal) {
  const digest = sha256Digest(bytes);
  const scopes = [`repository:${repository}:pull,push`];
  const head = await client.request({
    method: 'HEAD',
    repository,
    path: `blobs/${digest}`,
    accept: [404],
    scopes,
    signal,
  });
  if (head.status === 200) return digest;
  const start = await client.request({ method: 'POST', repository, path: 'blobs/uploads/', scopes, signal });
  await start.body?.cancel();
  const loc = start.headers.get('location');
  if (!loc)
    throw client.error('PROTOCOL', repository, `upload start answered HTTP ${start.status} without a Location header`);
  const url = new URL(loc, client.base);
  url.searchParams.set('digest', digest);
  const put = await client.request({
    method: 'PUT',
    repository,
    path: url.toString(),
    headers: { 'content-type': 'application/octet-stream' },
    body: () => bytes as Uint8Array<ArrayBuffer>,
    scopes,
    retry: false,
    signal,
  });
  await put.body?.cancel();
  return digest;
}

async function putManifestBytes(
  client: RegistryClient,
  repository: string,
  reference: string,
  mediaType: string,
  bytes: Uint8Array,
  signal?: AbortSignal,
): Promise<void> {
  const res = await client.request({
    method: 'PUT',
    repository,
    path: `manifests/${reference}`,
    headers: { 'content-type': mediaType },
    body: () => bytes as Uint8Array<ArrayBuffer>,
    scopes: [`repository:${repository}:pull,push`],
    signal,
  });
  await res.body?.cancel();
}
