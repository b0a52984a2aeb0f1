import { setTimeout as sleep } from 'node:timers/promises';
import pLimit from 'p-limit';
import type { Response } from 'undici';
import type { Egress } from '../net/guardedFetch.js';
import { metrics } from '../observability/metrics.js';
import { withSpan } from '../observability/tracing.js';
import { isTransient, OciError } from './errors.js';
import { type Descriptor, isDigest, MANIFEST_ACCEPT, MEDIA_TYPES, parseManifest, sha256Digest } from './manifest.js';
import { digestTag, evidenceToCopy, listReferrers } from './referrers.js';
import { backoffDelay, DEFAULT_RETRY, RegistryClient, type RegistryEndpoint } from './registryClient.js';

export { OciError } from './errors.js';
export { MAX_EVIDENCE_COPIED } from './referrers.js';
export type { RegistryEndpoint } from './registryClient.js';

export interface CopyImageRequest {
  source: RegistryEndpoint & { repository: string; reference: string };
  target: RegistryEndpoint & { repository: string; tag: string };
  expectedDigest?: string;
  signal?: AbortSignal;
}

export interface CopyImageResult {
  digest: string;
  blobsCopied: number;
  blobsSkipped: number;
  blobsMounted: number;
  manifests: number;
  /** Signatures, attestations and SBOMs of the image copied with it (OCI referrers and cosign tags). */
  evidence: number;
  /** Referrers left in the source because it lists more than MAX_EVIDENCE_COPIED. */
  evidenceSkipped: number;
  /** The source lists more referrers than were read (MAX_REFERRERS_READ): more were left. */
  evidenceUnread?: boolean;
}

export interface CopyOptions {
  /** Blobs up to this size are buffered and uploaded in one PUT; bigger ones are streamed (POST, PATCH, PUT). */
  monolithicLimitBytes?: number;
  /** Parallel blob transfers per image. */
  concurrency?: number;
  /** Egress guard for both registries (token services and redirects included); default: the controller's. */
  egress?: Egress;
}

export interface FetchedManifest {
  bytes: Uint8Array<ArrayBuffer>;
  mediaType: string;
  digest: string;
}

interface CopyContext {
  src: RegistryClient;
  dst: RegistryClient;
  srcRepo: string;
  dstRepo: string;
  sameRegistry: boolean;
  result: CopyImageResult;
  limit: ReturnType<typeof pLimit>;
  monolithicLimit: number;
  signal?: AbortSignal;
}

/**
 * Copies an image (or a multi-arch index with every child) between repositories with the OCI
 * distribution API, leaving the digest unchanged, and tags it in the target.
 */
export function copyImage(req: CopyImageRequest, opts: CopyOptions = {}): Promise<CopyImageResult> {
  const attrs = {
    'oci.source': `${req.source.host}/${req.source.repository}:${req.source.reference}`,
    'oci.target': `${req.target.host}/${req.target.repository}:${req.target.tag}`,
  };
  return withSpan('oci.copyImage', attrs, async (span) => {
    const src = new RegistryClient(req.source, undefined, opts.egress);
    const dst = new RegistryClient(req.target, undefined, opts.egress);
    const ctx: CopyContext = {
      src,
      dst,
      srcRepo: req.source.repository,
      dstRepo: req.target.repository,
      sameRegistry: normalizeHost(req.source.host) === normalizeHost(req.target.host),
      result: {
        digest: '',
        blobsCopied: 0,
        blobsSkipped: 0,
        blobsMounted: 0,
        manifests: 0,
        evidence: 0,
        evidenceSkipped: 0,
      },
      limit: pLimit(opts.concurrency ?? 4),
      monolithicLimit: opts.monolithicLimitBytes ?? 16 * 1024 * 1024,
      signal: req.signal,
    };
    const root = await getManifest(src, ctx.srcRepo, req.source.reference, req.signal);
    if (req.expectedDigest && root.digest !== req.expectedDigest) {
      throw src.error(
        'DIGEST_MISMATCH',
        ctx.srcRepo,
        `${req.source.reference} resolves to ${root.digest}, expected ${req.expectedDigest}; the source tag moved since the plan was computed`,
      );
    }
    await copyTree(ctx, root);
    await putManifest(ctx, root, req.target.tag);
    ctx.result.digest = root.digest;
    await copyEvidence(ctx, root.digest);
    span.setAttributes({
      'oci.digest': root.digest,
      'oci.blobs_copied': ctx.result.blobsCopied,
      'oci.blobs_skipped': ctx.result.blobsSkipped,
      'oci.blobs_mounted': ctx.result.blobsMounted,
      'oci.manifests': ctx.result.manifests,
      'oci.evidence': ctx.result.evidence,
    });
    return ctx.result;
  });
}

/** The digest a tag (or digest) points at now, undefined when the manifest does not exist. */
export async function resolveDigest(
  ep: RegistryEndpoint,
  repository: string,
  reference: string,
  egress?: Egress,
): Promise<string | undefined> {
  const client = new RegistryClient(ep, undefined, egress);
  const res = await client.request({
    method: 'HEAD',
    repository,
    path: `manifests/${reference}`,
    headers: { accept: MANIFEST_ACCEPT },
    accept: [404],
  });
  if (res.status === 404) return undefined;
  const header = res.headers.get('docker-content-digest');
  if (header) return header;
  // Some registries omit the header on HEAD; hashing the body is authoritative anyway.
  return (await getManifest(client, repository, reference)).digest;
}

export async function getManifest(
  client: RegistryClient,
  repository: string,
  reference: string,
  signal?: AbortSignal,
): Promise<FetchedManifest> {
  const res = await client.request({
    method: 'GET',
    repository,
    path: `manifests/${reference}`,
    headers: { accept: MANIFEST_ACCEPT },
    accept: [404],
    signal,
  });
  if (res.status === 404) {
    await res.body?.cancel();
    throw client.error(
      'NOT_FOUND',
      repository,
      `image ${reference} not found; was it pushed, and is the repository name right?`,
    );
  }
  const bytes = new Uint8Array(await res.arrayBuffer());
  const digest = sha256Digest(bytes);
  const header = res.headers.get('docker-content-digest');
  if ((header && header !== digest) || (isDigest(reference) && reference !== digest)) {
    throw client.error(
      'DIGEST_MISMATCH',
      repository,
      `manifest ${reference} bytes hash to ${digest} but the registry says ${header ?? reference}`,
    );
  }
  let mediaType: string;
  try {
    mediaType = parseManifest(bytes, res.headers.get('content-type')).mediaType;
  } catch (err) {
    throw client.error('PROTOCOL', repository, `manifest ${reference}: ${(err as Error).message}`);
  }
  return { bytes, mediaType, digest };
}

/** Cosign's tag scheme for what is attached to `sha256:<hex>`: `sha256-<hex>.<suffix>`. */
const COSIGN_SUFFIXES = ['sig', 'att', 'sbom'] as const;

/**
 * Carries the evidence about an image with it, so that the target verifies as the source did:
 * the image's OCI 1.1 referrers (signatures, attestations, SBOMs whose `subject` is the image),
 * pushed by digest so a target with the referrers API lists them too, the fallback referrers index
 * of a registry without that API (CNCF distribution 3.1 has none) under the same tag, and cosign's
 * tag-scheme artifacts (`sha256-<hex>.sig|.att|.sbom`). Each is copied whole and digest-checked
 * like the image; none of them is trusted here: verifying them is the signature policy's job.
 */
async function copyEvidence(ctx: CopyContext, digest: string): Promise<void> {
  const tagOf = digestTag(digest);
  const listed = await listReferrers(ctx.src, ctx.srcRepo, digest, ctx.signal);
  // Anyone who may push to the source can attach referrers: a bounded number is carried, Sigstore
  // bundles first, and the rest is counted (the app's message says so), never a reason to fail.
  const { copy, skipped } = evidenceToCopy(listed.referrers);
  ctx.result.evidenceSkipped += skipped;
  if (listed.truncated) ctx.result.evidenceUnread = true;
  for (const d of copy) {
    const m = await getManifest(ctx.src, ctx.srcRepo, d.digest, ctx.signal);
    await copyTree(ctx, m);
    await putManifest(ctx, m, m.digest);
    ctx.result.evidence++;
  }
  // The fallback index last, once everything it lists is in the target: the source's as is, or,
  // when some were left behind, one listing only what was carried.
  if (listed.fallback) {
    const whole = skipped === 0 && !listed.truncated;
    const bytes = whole
      ? (listed.fallback.bytes as Uint8Array<ArrayBuffer>)
      : new TextEncoder().encode(
          JSON.stringify({ schemaVersion: 2, mediaType: MEDIA_TYPES.ociIndex, manifests: copy }),
        );
    await putManifest(
      ctx,
      { bytes, mediaType: MEDIA_TYPES.ociIndex, digest: whole ? listed.fallback.digest : sha256Digest(bytes) },
      tagOf,
    );
  }
  for (const suffix of COSIGN_SUFFIXES) {
    const tag = `${tagOf}.${suffix}`;
    const m = await manifestIfPresent(ctx, tag);
    if (!m) continue;
    await copyTree(ctx, m);
    await putManifest(ctx, m, tag);
    ctx.result.evidence++;
  }
}

async function manifestIfPresent(ctx: CopyContext, reference: string): Promise<FetchedManifest | undefined> {
  return getManifest(ctx.src, ctx.srcRepo, reference, ctx.signal).catch((err: unknown) => {
    if (err instanceof OciError && err.code === 'NOT_FOUND') return undefined;
    throw err;
  });
}

/** Copies everything a manifest references (children of an index first), but not the manifest itself. */
async function copyTree(ctx: CopyContext, m: FetchedManifest): Promise<void> {
  const parsed = parseManifest(m.bytes, m.mediaType);
  if (parsed.kind === 'image') {
    // Dedupe: the same layer can appear twice in one manifest.
    const unique = [...new Map(parsed.blobs.map((b) => [b.digest, b])).values()];
    await Promise.all(unique.map((b) => ctx.limit(() => copyBlob(ctx, b))));
    return;
  }
  for (const child of parsed.children) {
    const fetched = await getManifest(ctx.src, ctx.srcRepo, child.digest, ctx.signal);
    await copyTree(ctx, fetched);
    // Children go in by digest so the index's references resolve before the index is pushed.
    await putManifest(ctx, fetched, child.digest);
  }
}

async function putManifest(ctx: CopyContext, m: FetchedManifest, reference: string): Promise<void> {
  const res = await ctx.dst.request({
    method: 'PUT',
    repository: ctx.dstRepo,
    path: `manifests/${reference}`,
    headers: { 'content-type': m.mediaType },
    body: () => m.bytes,
    scopes: [`repository:${ctx.dstRepo}:pull,push`],
    signal: ctx.signal,
  });
  await res.body?.cancel();
  const stored = res.headers.get('docker-content-digest');
  if (stored && stored !== m.digest) {
    throw ctx.dst.error(
      'DIGEST_MISMATCH',
      ctx.dstRepo,
      `manifest pushed as ${reference} stored with digest ${stored}, source digest is ${m.digest}; the target registry rewrote it`,
    );
  }
  ctx.result.manifests++;
}

async function copyBlob(ctx: CopyContext, blob: Descriptor): Promise<void> {
  if (await blobExists(ctx, blob.digest)) {
    ctx.result.blobsSkipped++;
    metrics.imageCopyBlobs.inc({ action: 'skipped' });
    return;
  }
  let location: string | undefined;
  if (ctx.sameRegistry && ctx.srcRepo !== ctx.dstRepo) {
    location = await tryMount(ctx, blob.digest);
    if (!location) {
      ctx.result.blobsMounted++;
      metrics.imageCopyBlobs.inc({ action: 'mounted' });
      return;
    }
  }
  await uploadBlob(ctx, blob, location);
  ctx.result.blobsCopied++;
  metrics.imageCopyBlobs.inc({ action: 'copied' });
}

async function blobExists(ctx: CopyContext, digest: string): Promise<boolean> {
  const res = await ctx.dst.request({
    method: 'HEAD',
    repository: ctx.dstRepo,
    path: `blobs/${digest}`,
    accept: [404],
    scopes: [`repository:${ctx.dstRepo}:pull,push`],
    signal: ctx.signal,
  });
  return res.status === 200;
}

/** Cross-repository mount: undefined when mounted (201), else the upload Location to use (202). */
async function tryMount(ctx: CopyContext, digest: string): Promise<string | undefined> {
  const res = await ctx.dst.request({
    method: 'POST',
    repository: ctx.dstRepo,
    path: `blobs/uploads/?mount=${encodeURIComponent(digest)}&from=${encodeURIComponent(ctx.srcRepo)}`,
    scopes: [`repository:${ctx.dstRepo}:pull,push`, `repository:${ctx.srcRepo}:pull`],
    signal: ctx.signal,
  });
  await res.body?.cancel();
  if (res.status === 201) return undefined;
  return uploadLocation(ctx, res);
}

async function startUpload(ctx: CopyContext): Promise<string> {
  const res = await ctx.dst.request({
    method: 'POST',
    repository: ctx.dstRepo,
    path: 'blobs/uploads/',
    scopes: [`repository:${ctx.dstRepo}:pull,push`],
    signal: ctx.signal,
  });
  await res.body?.cancel();
  return uploadLocation(ctx, res);
}

function uploadLocation(ctx: CopyContext, res: Response): string {
  const loc = res.headers.get('location');
  if (!loc)
    throw ctx.dst.error('PROTOCOL', ctx.dstRepo, `upload start answered HTTP ${res.status} without a Location header`);
  return new URL(loc, ctx.dst.base).toString();
}

function withDigest(location: string, digest: string): string {
  const u = new URL(location);
  u.searchParams.set('digest', digest);
  return u.toString();
}

/**
 * Small blobs: GET into memory, check the hash, one PUT. Big blobs: GET streamed straight into a
 * PATCH so memory stays flat; the registry checks the digest on the final PUT. A streamed transfer
 * cannot be replayed per request, so the whole blob transfer is retried on transient failures.
 */
async function uploadBlob(ctx: CopyContext, blob: Descriptor, firstLocation?: string): Promise<void> {
  let location = firstLocation;
  for (let attempt = 0; ; attempt++) {
    try {
      location ??= await startUpload(ctx);
      if (blob.size <= ctx.monolithicLimit) await monolithic(ctx, blob, location);
      else await streamed(ctx, blob, location);
      return;
    } catch (err) {
      location = undefined;
      if (!isTransient(err) || attempt + 1 >= DEFAULT_RETRY.attempts || ctx.signal?.aborted) throw err;
      await sleep(backoffDelay(attempt, DEFAULT_RETRY), undefined, { signal: ctx.signal });
    }
  }
}

async function getBlob(ctx: CopyContext, digest: string): Promise<Response> {
  return ctx.src.request({
    method: 'GET',
    repository: ctx.srcRepo,
    path: `blobs/${digest}`,
    timeoutMs: 0,
    signal: ctx.signal,
  });
}

async function monolithic(ctx: CopyContext, blob: Descriptor, location: string): Promise<void> {
  const bytes = new Uint8Array(await (await getBlob(ctx, blob.digest)).arrayBuffer());
  const actual = sha256Digest(bytes);
  if (actual !== blob.digest) {
    throw ctx.src.error(
      'DIGEST_MISMATCH',
      ctx.srcRepo,
      `blob ${blob.digest} downloaded with digest ${actual}; the source registry is serving corrupt data`,
    );
  }
  const res = await ctx.dst.request({
    method: 'PUT',
    repository: ctx.dstRepo,
    path: withDigest(location, blob.digest),
    headers: { 'content-type': 'application/octet-stream' },
    body: () => bytes,
    scopes: [`repository:${ctx.dstRepo}:pull,push`],
    retry: false, // an upload session is single-use once the PUT reached the registry
    signal: ctx.signal,
  });
  await res.body?.cancel();
}

async function streamed(ctx: CopyContext, blob: Descriptor, location: string): Promise<void> {
  const source = await getBlob(ctx, blob.digest);
  if (!source.body) throw ctx.src.error('PROTOCOL', ctx.srcRepo, `blob ${blob.digest} GET returned no body`);
  const body = source.body;
  const patched = await ctx.dst.request({
    method: 'PATCH',
    repository: ctx.dstRepo,
    path: location,
    headers: { 'content-type': 'application/octet-stream' },
    body: () => body,
    scopes: [`repository:${ctx.dstRepo}:pull,push`],
    retry: false,
    timeoutMs: 0,
    signal: ctx.signal,
  });
  await patched.body?.cancel();
  const next = uploadLocation(ctx, patched);
  const res = await ctx.dst.request({
    method: 'PUT',
    repository: ctx.dstRepo,
    path: withDigest(next, blob.digest),
    scopes: [`repository:${ctx.dstRepo}:pull,push`],
    retry: false,
    signal: ctx.signal,
  });
  await res.body?.cancel();
}

function normalizeHost(host: string): string {
  return host
    .toLowerCase()
    .replace(/^localhost(?=:|$)/, '127.0.0.1')
    .replace(/:443$/, '');
}
