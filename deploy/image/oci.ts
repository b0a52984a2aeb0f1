import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { MEDIA_TYPES } from '@kpromo/controller/oci';
import { type TarEntry, tarArchive } from './tar.js';

/**
 * Pure builders for the OCI image format (image-spec v1.1): layers, the image config, the image
 * manifest and the index. Every JSON document is written with a fixed key order and no
 * whitespace, so equal inputs always give equal digests.
 */

export { MEDIA_TYPES };

export interface Blob {
  mediaType: string;
  digest: string;
  size: number;
  bytes: Buffer;
}

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
  platform?: Platform;
}

export interface Platform {
  architecture: string;
  os: string;
  variant?: string;
}

export const sha256 = (b: Uint8Array): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

export function blob(mediaType: string, bytes: Buffer): Blob {
  return { mediaType, digest: sha256(bytes), size: bytes.length, bytes };
}

export const descriptor = (b: Blob, extra: Partial<Descriptor> = {}): Descriptor => ({
  mediaType: b.mediaType,
  digest: b.digest,
  size: b.size,
  ...extra,
});

export interface Layer {
  blob: Blob;
  /** Digest of the uncompressed tar (the config's rootfs.diff_ids). */
  diffId: string;
  /** What the layer holds, for the config's history. */
  comment: string;
}

/**
 * A gzip-compressed layer. zlib at a fixed level writes no timestamp or file name into the gzip
 * header (MTIME 0), so the compressed bytes depend only on the tar and the zlib version.
 */
export function layer(entries: readonly TarEntry[], mtime: number, comment: string): Layer {
  const tar = tarArchive(entries, mtime);
  return { blob: blob(MEDIA_TYPES.ociLayerGzip, gzipSync(tar, { level: 9 })), diffId: sha256(tar), comment };
}

export interface ImageSettings {
  platform: Platform;
  /** ISO 8601, from the commit time or SOURCE_DATE_EPOCH: never the wall clock. */
  created: string;
  user: string;
  entrypoint: string[];
  cmd?: string[];
  env: string[];
  workingDir: string;
  labels: Record<string, string>;
}

/** The image config (application/vnd.oci.image.config.v1+json). */
export function imageConfig(s: ImageSettings, layers: readonly Layer[]): Blob {
  const doc = {
    created: s.created,
    architecture: s.platform.architecture,
    ...(s.platform.variant ? { variant: s.platform.variant } : {}),
    os: s.platform.os,
    config: {
      User: s.user,
      Env: s.env,
      Entrypoint: s.entrypoint,
      ...(s.cmd ? { Cmd: s.cmd } : {}),
      WorkingDir: s.workingDir,
      Labels: sortedObject(s.labels),
    },
    rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) },
    history: layers.map((l) => ({ created: s.created, created_by: 'deploy/image/buildImage.ts', comment: l.comment })),
  };
  return blob(MEDIA_TYPES.ociConfig, Buffer.from(JSON.stringify(doc)));
}

/** The image manifest (application/vnd.oci.image.manifest.v1+json). */
export function imageManifest(config: Blob, layers: readonly Layer[], annotations?: Record<string, string>): Blob {
  const doc = {
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.ociManifest,
    config: descriptor(config),
    layers: layers.map((l) => descriptor(l.blob)),
    ...(annotations ? { annotations: sortedObject(annotations) } : {}),
  };
  return blob(MEDIA_TYPES.ociManifest, Buffer.from(JSON.stringify(doc)));
}

/** An image index (application/vnd.oci.image.index.v1+json): a multi-platform image or a layout's index.json. */
export function imageIndex(manifests: readonly Descriptor[], annotations?: Record<string, string>): Blob {
  const doc = {
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.ociIndex,
    manifests,
    ...(annotations ? { annotations: sortedObject(annotations) } : {}),
  };
  return blob(MEDIA_TYPES.ociIndex, Buffer.from(JSON.stringify(doc)));
}

export function sortedObject(o: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** One built image: its manifest and every blob it references. */
export interface Image {
  manifest: Blob;
  config: Blob;
  layers: Layer[];
  platform: Platform;
}

export function assembleImage(settings: ImageSettings, layers: Layer[], annotations?: Record<string, string>): Image {
  const config = imageConfig(settings, layers);
  return { manifest: imageManifest(config, layers, annotations), config, layers, platform: settings.platform };
}

export const imageBlobs = (img: Image): Blob[] => [img.config, ...img.layers.map((l) => l.blob), img.manifest];
