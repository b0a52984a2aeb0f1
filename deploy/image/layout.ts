import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Blob, descriptor, type Image, imageBlobs, imageIndex } from './oci.js';

/**
 * An OCI image layout directory (image-spec "image-layout"): `oci-layout`, `index.json` naming the
 * image by `org.opencontainers.image.ref.name`, and every blob under `blobs/sha256/`.
 */

export const REF_NAME = 'org.opencontainers.image.ref.name';

export function writeLayout(dir: string, img: Image, refName: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'blobs/sha256'), { recursive: true });
  writeFileSync(join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  for (const b of imageBlobs(img)) writeFileSync(blobPath(dir, b.digest), b.bytes);
  const index = imageIndex([
    descriptor(img.manifest, { annotations: { [REF_NAME]: refName }, platform: img.platform }),
  ]);
  writeFileSync(join(dir, 'index.json'), index.bytes);
}

export function blobPath(dir: string, digest: string): string {
  const m = /^sha256:([a-f0-9]{64})$/.exec(digest);
  if (!m) throw new Error(`${dir}: unsupported or malformed digest ${digest}`);
  return join(dir, 'blobs/sha256', m[1]);
}

export function readBlob(dir: string, mediaType: string, digest: string): Blob {
  const bytes = readFileSync(blobPath(dir, digest));
  return { mediaType, digest, size: bytes.length, bytes };
}
