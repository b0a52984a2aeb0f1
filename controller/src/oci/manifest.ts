import { createHash } from 'node:crypto';

export const MEDIA_TYPES = {
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  ociConfig: 'application/vnd.oci.image.config.v1+json',
  ociLayerGzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerManifestList: 'application/vnd.docker.distribution.manifest.list.v2+json',
} as const;

/** Sent on every manifest GET/HEAD so registries return the stored form instead of converting it. */
export const MANIFEST_ACCEPT = [
  MEDIA_TYPES.ociIndex,
  MEDIA_TYPES.ociManifest,
  MEDIA_TYPES.dockerManifestList,
  MEDIA_TYPES.dockerManifest,
].join(', ');

export interface Descriptor {
  mediaType?: string;
  digest: string;
  size: number;
  platform?: { architecture: string; os: string; variant?: string };
}

export type ParsedManifest =
  | { kind: 'index'; mediaType: string; children: Descriptor[] }
  | { kind: 'image'; mediaType: string; blobs: Descriptor[] };

export function sha256Digest(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

export function isDigest(reference: string): boolean {
  return /^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/.test(reference) && reference.includes(':');
}

/**
 * Classifies manifest bytes. The Content-Type header wins over the body's mediaType field, which
 * is optional in OCI manifests; an index is recognised by its `manifests` array as a last resort.
 */
export function parseManifest(bytes: Uint8Array, contentType: string | null): ParsedManifest {
  let doc: { mediaType?: string; manifests?: Descriptor[]; config?: Descriptor; layers?: Descriptor[] };
  try {
    doc = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    throw new Error('manifest is not valid JSON');
  }
  const headerType = contentType?.split(';')[0].trim();
  const mediaType =
    (headerType && headerType !== 'application/json' && headerType !== 'application/octet-stream'
      ? headerType
      : undefined) ??
    doc.mediaType ??
    (Array.isArray(doc.manifests) ? MEDIA_TYPES.ociIndex : MEDIA_TYPES.ociManifest);
  if (mediaType === MEDIA_TYPES.ociIndex || mediaType === MEDIA_TYPES.dockerManifestList) {
    if (!Array.isArray(doc.manifests)) throw new Error(`index (${mediaType}) has no manifests array`);
    return { kind: 'index', mediaType, children: doc.manifests };
  }
  if (mediaType === MEDIA_TYPES.ociManifest || mediaType === MEDIA_TYPES.dockerManifest) {
    if (!doc.config?.digest) throw new Error(`manifest (${mediaType}) has no config descriptor`);
    return { kind: 'image', mediaType, blobs: [doc.config, ...(doc.layers ?? [])] };
  }
  throw new Error(`unsupported manifest media type ${mediaType} (schema1 and artifacts are not copied)`);
}
