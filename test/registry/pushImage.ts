import { createHash, randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';

/**
 * Pushes a small synthetic image to a real registry with plain distribution API calls (no controller
 * code, so controller tests never test their code with itself). The same seed gives the same digest.
 */
export interface PushTestImageOptions {
  host: string;
  repository: string;
  tag: string;
  multiArch?: boolean;
  seed?: string;
  /** Bytes of pseudo-random file content in the layer (default 2 KiB). */
  layerSize?: number;
  /** Extra config labels (as Dockerfile LABEL writes them), e.g. org.opencontainers.image.revision. */
  labels?: Record<string, string>;
}

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json';
const OCI_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip';

interface Blob {
  mediaType: string;
  bytes: Buffer;
  digest: string;
}

const sha256 = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const blob = (mediaType: string, bytes: Buffer): Blob => ({ mediaType, bytes, digest: sha256(bytes) });
const descriptor = (b: Blob) => ({ mediaType: b.mediaType, digest: b.digest, size: b.bytes.length });

/** Deterministic pseudo-random bytes: a SHA-256 counter stream over the seed. */
export function seededBytes(seed: string, size: number): Buffer {
  const out = Buffer.alloc(size);
  for (let i = 0, off = 0; off < size; i++) {
    const chunk = createHash('sha256').update(`${seed}:${i}`).digest();
    off += chunk.copy(out, off);
  }
  return out;
}

/** A one-file ustar archive; enough for a valid layer. */
export function tarFile(name: string, content: Buffer): Buffer {
  const header = Buffer.alloc(512);
  const put = (s: string, off: number, len: number) => header.write(s, off, len, 'ascii');
  const octal = (n: number, len: number) => n.toString(8).padStart(len - 1, '0');
  put(name, 0, 100);
  put(octal(0o644, 8), 100, 8);
  put(octal(0, 8), 108, 8);
  put(octal(0, 8), 116, 8);
  put(octal(content.length, 12), 124, 12);
  put(octal(0, 12), 136, 12);
  put('        ', 148, 8); // checksum is computed with spaces here
  put('0', 156, 1);
  put('ustar\u000000', 257, 8);
  let sum = 0;
  for (const b of header) sum += b;
  put(`${octal(sum, 7)}\u0000 `, 148, 8);
  const pad = Buffer.alloc((512 - (content.length % 512)) % 512);
  return Buffer.concat([header, content, pad, Buffer.alloc(1024)]);
}

function platformImage(seed: string, arch: string, layerSize: number, labels: Record<string, string> = {}) {
  const layer = blob(OCI_LAYER, gzipSync(tarFile(`data-${arch}.bin`, seededBytes(`${seed}:${arch}`, layerSize))));
  const config = blob(
    OCI_CONFIG,
    Buffer.from(
      JSON.stringify({
        architecture: arch,
        os: 'linux',
        config: { Labels: { ...labels, 'kpromo.test/seed': seed } },
        rootfs: {
          type: 'layers',
          diff_ids: [sha256(tarFile(`data-${arch}.bin`, seededBytes(`${seed}:${arch}`, layerSize)))],
        },
      }),
    ),
  );
  const manifest = blob(
    OCI_MANIFEST,
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        config: descriptor(config),
        layers: [descriptor(layer)],
      }),
    ),
  );
  return { blobs: [config, layer], manifest, arch };
}

async function check(res: Response, what: string): Promise<Response> {
  if (!res.ok) throw new Error(`pushTestImage: ${what} → HTTP ${res.status}: ${await res.text()}`);
  return res;
}

async function pushBlob(base: string, repository: string, b: Blob): Promise<void> {
  const head = await fetch(`${base}/v2/${repository}/blobs/${b.digest}`, { method: 'HEAD' });
  if (head.ok) return;
  const start = await check(
    await fetch(`${base}/v2/${repository}/blobs/uploads/`, { method: 'POST' }),
    `start upload in ${repository}`,
  );
  const loc = new URL(start.headers.get('location')!, base);
  loc.searchParams.set('digest', b.digest);
  await check(
    await fetch(loc, {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Uint8Array(b.bytes),
    }),
    `upload ${b.digest}`,
  );
}

async function pushManifest(base: string, repository: string, ref: string, m: Blob): Promise<void> {
  const res = await check(
    await fetch(`${base}/v2/${repository}/manifests/${ref}`, {
      method: 'PUT',
      headers: { 'content-type': m.mediaType },
      body: new Uint8Array(m.bytes),
    }),
    `put manifest ${repository}:${ref}`,
  );
  await res.body?.cancel();
}

export async function pushTestImage(opts: PushTestImageOptions): Promise<{ digest: string }> {
  const base = `http://${opts.host}`;
  const seed = opts.seed ?? randomUUID();
  const size = opts.layerSize ?? 2048;
  const images = (opts.multiArch ? ['amd64', 'arm64'] : ['amd64']).map((a) =>
    platformImage(seed, a, size, opts.labels),
  );
  for (const img of images) for (const b of img.blobs) await pushBlob(base, opts.repository, b);
  if (!opts.multiArch) {
    await pushManifest(base, opts.repository, opts.tag, images[0].manifest);
    return { digest: images[0].manifest.digest };
  }
  for (const img of images) await pushManifest(base, opts.repository, img.manifest.digest, img.manifest);
  const index = blob(
    OCI_INDEX,
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_INDEX,
        manifests: images.map((img) => ({
          ...descriptor(img.manifest),
          platform: { architecture: img.arch, os: 'linux' },
        })),
      }),
    ),
  );
  await pushManifest(base, opts.repository, opts.tag, index);
  return { digest: index.digest };
}

/**
 * Pushes an artifact about an image the way signing and SBOM tools do: an OCI 1.1 image manifest
 * with `artifactType`, the empty config, one layer of `content`, and `subject` naming the image (the
 * registry then lists it in the image's referrers), and with `tag` also under that tag (cosign's
 * `sha256-<hex>.sig` scheme). Returns the artifact manifest's digest.
 */
export async function pushTestArtifact(opts: {
  host: string;
  repository: string;
  /** The image it is about: digest of its manifest (its size and media type are read from the registry). */
  subject: string;
  artifactType: string;
  content: string;
  /** Push it under this tag (e.g. cosign's `sha256-<hex>.sig`) instead of by digest only. */
  tag?: string;
  /** Leave the subject out (cosign's tag scheme before OCI 1.1 has none). Default true. */
  withSubject?: boolean;
}): Promise<{ digest: string }> {
  const base = `http://${opts.host}`;
  const head = await check(
    await fetch(`${base}/v2/${opts.repository}/manifests/${opts.subject}`, {
      method: 'HEAD',
      headers: { accept: `${OCI_MANIFEST}, ${OCI_INDEX}` },
    }),
    `read subject ${opts.subject}`,
  );
  const subject = {
    mediaType: head.headers.get('content-type') ?? OCI_MANIFEST,
    digest: opts.subject,
    size: Number(head.headers.get('content-length')),
  };
  const empty = blob('application/vnd.oci.empty.v1+json', Buffer.from('{}'));
  const layer = blob('text/plain', Buffer.from(opts.content));
  for (const b of [empty, layer]) await pushBlob(base, opts.repository, b);
  const manifest = blob(
    OCI_MANIFEST,
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        artifactType: opts.artifactType,
        config: descriptor(empty),
        layers: [descriptor(layer)],
        ...(opts.withSubject === false ? {} : { subject }),
      }),
    ),
  );
  await pushManifest(base, opts.repository, opts.tag ?? manifest.digest, manifest);
  if (opts.withSubject !== false)
    await addToReferrersTag(base, opts.repository, opts.subject, manifest, opts.artifactType);
  return { digest: manifest.digest };
}

/**
 * OCI 1.1's referrers tag schema, as oras and cosign keep it on a registry without the referrers
 * API (CNCF distribution 3.1 has none): the index under `sha256-<hex>` of the subject lists every
 * artifact about it. Kept only when the registry does not serve the API.
 */
async function addToReferrersTag(
  base: string,
  repository: string,
  subject: string,
  artifact: Blob,
  artifactType: string,
) {
  const api = await fetch(`${base}/v2/${repository}/referrers/${subject}`, { headers: { accept: OCI_INDEX } });
  await api.body?.cancel();
  if (api.ok) return;
  const tag = subject.replace(':', '-');
  const got = await fetch(`${base}/v2/${repository}/manifests/${tag}`, { headers: { accept: OCI_INDEX } });
  let listed: object[] = [];
  if (got.ok) listed = ((await got.json()) as { manifests: object[] }).manifests;
  else await got.body?.cancel();
  const next = blob(
    OCI_INDEX,
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_INDEX,
        manifests: [...listed, { ...descriptor(artifact), artifactType }],
      }),
    ),
  );
  await pushManifest(base, repository, tag, next);
}
