import { parseImageRef } from '../util/imageRef.js';

/** Does an image reference carry the desired version (digest wins over tag)? */
export function imageMatches(image: string | undefined, desired: { tag?: string; digest?: string }): boolean {
  if (!image) return false;
  const r = parseImageRef(image);
  if (desired.digest) return r.digest === desired.digest;
  return !!desired.tag && r.tag === desired.tag;
}
