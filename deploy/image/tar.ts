/**
 * Deterministic tar archives for image layers: entries sorted by path, one fixed mtime, uid/gid 0
 * unless an entry says otherwise, no user/group names, no device numbers. The same entries always
 * give the same bytes (the layer digest depends on nothing else).
 */

interface Owned {
  /** Path inside the image without a leading slash, e.g. `etc/passwd`. */
  path: string;
  uid?: number;
  gid?: number;
}
export type TarEntry =
  | (Owned & { type: 'dir'; mode: number })
  | (Owned & { type: 'file'; mode: number; data: Uint8Array })
  | (Owned & { type: 'symlink'; target: string })
  /** A second name for a regular file that comes earlier in the archive (`target` is its path). */
  | (Owned & { type: 'hardlink'; target: string });

const BLOCK = 512;
const TYPEFLAG = { file: '0', hardlink: '1', symlink: '2', dir: '5' } as const;

/** `/a//b/` → `a/b`; refuses `..` and empty names (a layer must never write outside its root). */
export function normalizePath(p: string): string {
  const parts = p.split('/').filter((s) => s !== '' && s !== '.');
  if (parts.length === 0 || parts.includes('..')) throw new Error(`tar: invalid path ${JSON.stringify(p)}`);
  return parts.join('/');
}

/**
 * Entries in archive order: sorted by path (bytewise), every missing parent directory added (0755),
 * duplicates refused. A parent's path is a prefix of its children's, so it always sorts first.
 */
export function orderEntries(entries: readonly TarEntry[]): TarEntry[] {
  const byPath = new Map<string, TarEntry>();
  for (const e of entries) {
    const path = normalizePath(e.path);
    if (byPath.has(path)) throw new Error(`tar: ${path} added twice`);
    byPath.set(path, { ...e, path });
  }
  for (const path of [...byPath.keys()]) {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join('/');
      const existing = byPath.get(parent);
      if (!existing) byPath.set(parent, { type: 'dir', path: parent, mode: 0o755 });
      else if (existing.type !== 'dir') throw new Error(`tar: ${parent} is a ${existing.type} but ${path} is under it`);
    }
  }
  const sorted = [...byPath.values()].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  const seen = new Set<string>();
  for (const e of sorted) {
    if (e.type === 'hardlink') {
      const target = normalizePath(e.target);
      if (!seen.has(target) || byPath.get(target)?.type !== 'file')
        throw new Error(`tar: hard link ${e.path} must point to a regular file earlier in the archive, not ${target}`);
    }
    seen.add(e.path);
  }
  return sorted;
}

const octal = (n: number, width: number) => `${n.toString(8).padStart(width - 1, '0')}\0`;

/** A PAX extended-header record: `<len> <key>=<value>\n`, where len counts itself. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (`${len}${body}`.length !== len) len++; // the length's own digits count too
  return `${len}${body}`;
}

function header(o: {
  name: string;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtime: number;
  typeflag: string;
  linkname?: string;
}): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(o.name, 0, 100, 'utf8');
  h.write(octal(o.mode & 0o7777, 8), 100, 8, 'ascii');
  h.write(octal(o.uid, 8), 108, 8, 'ascii');
  h.write(octal(o.gid, 8), 116, 8, 'ascii');
  h.write(octal(o.size, 12), 124, 12, 'ascii');
  h.write(octal(o.mtime, 12), 136, 12, 'ascii');
  h.write('        ', 148, 8, 'ascii'); // the checksum is computed over spaces in its own field
  h.write(o.typeflag, 156, 1, 'ascii');
  if (o.linkname) h.write(o.linkname, 157, 100, 'utf8');
  h.write('ustar\u000000', 257, 8, 'ascii');
  h.write(octal(0, 8), 329, 8, 'ascii'); // devmajor
  h.write(octal(0, 8), 337, 8, 'ascii'); // devminor
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
  return h;
}

const padding = (size: number) => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);

/**
 * The archive for `entries` (see orderEntries) with every mtime set to `mtime` (seconds since the
 * epoch: the commit time or SOURCE_DATE_EPOCH). Directories carry a trailing slash, as docker and
 * crane write them. Names or link targets over 100 bytes get a PAX header (`path`/`linkpath`).
 */
export function tarArchive(entries: readonly TarEntry[], mtime: number): Buffer {
  if (!Number.isInteger(mtime) || mtime < 0) throw new Error(`tar: mtime must be whole seconds ≥ 0, got ${mtime}`);
  const out: Buffer[] = [];
  for (const e of orderEntries(entries)) {
    const name = e.type === 'dir' ? `${e.path}/` : e.path;
    const linkname = e.type === 'symlink' ? e.target : e.type === 'hardlink' ? normalizePath(e.target) : undefined;
    const data = e.type === 'file' ? e.data : undefined;
    const pax = [
      Buffer.byteLength(name) > 100 ? paxRecord('path', name) : '',
      linkname && Buffer.byteLength(linkname) > 100 ? paxRecord('linkpath', linkname) : '',
    ].join('');
    const owner = { uid: e.uid ?? 0, gid: e.gid ?? 0 };
    if (pax) {
      const body = Buffer.from(pax, 'utf8');
      out.push(header({ name: 'PaxHeader', mode: 0o644, ...owner, size: body.length, mtime, typeflag: 'x' }));
      out.push(body, padding(body.length));
    }
    const mode = e.type === 'dir' || e.type === 'file' ? e.mode : 0o777;
    out.push(
      header({
        name: Buffer.byteLength(name) > 100 ? name.slice(0, 99) : name,
        mode,
        ...owner,
        size: data?.length ?? 0,
        mtime,
        typeflag: TYPEFLAG[e.type],
        linkname: linkname && Buffer.byteLength(linkname) > 100 ? linkname.slice(0, 99) : linkname,
      }),
    );
    if (data) out.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength), padding(data.length));
  }
  out.push(Buffer.alloc(BLOCK * 2)); // end of archive
  return Buffer.concat(out);
}
