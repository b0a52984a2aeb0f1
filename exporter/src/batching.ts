/** Port's documented bulk limits. */
export const MAX_BULK_ENTITIES = 20;
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Splits items into request bodies of at most `maxCount` items and `maxBytes` of JSON
 * (`{"entities":[...]}`). Items too large on their own come back in `tooLarge`.
 */
export function chunkByCountAndSize<T>(
  items: T[],
  maxCount = MAX_BULK_ENTITIES,
  maxBytes = MAX_BODY_BYTES,
  sizeOf: (item: T) => number = (item) => Buffer.byteLength(JSON.stringify(item)),
): { chunks: T[][]; tooLarge: T[] } {
  const overhead = Buffer.byteLength('{"entities":[]}');
  const chunks: T[][] = [];
  const tooLarge: T[] = [];
  let cur: T[] = [];
  let size = overhead;
  for (const item of items) {
    const n = sizeOf(item);
    if (overhead + n > maxBytes) {
      tooLarge.push(item);
      continue;
    }
    const add = n + (cur.length ? 1 : 0);
    if (cur.length >= maxCount || size + add > maxBytes) {
      chunks.push(cur);
      cur = [];
      size = overhead;
    }
    size += n + (cur.length ? 1 : 0);
    cur.push(item);
  }
  if (cur.length) chunks.push(cur);
  return { chunks, tooLarge };
}

/** Owned identifiers present in Port but no longer desired: what a resync deletes. */
export function staleIdentifiers(owned: Iterable<string>, desired: ReadonlySet<string>): string[] {
  return [...owned].filter((id) => !desired.has(id)).sort();
}
