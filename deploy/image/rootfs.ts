import { createHash } from 'node:crypto';
import { NONROOT } from './pins.js';
import { normalizePath, type TarEntry } from './tar.js';

/**
 * Pure decisions about what the image's file system holds: the account files, which files of
 * each Debian package are kept, the CA bundle, and that every shared library a binary needs is there.
 */

export const NODE_DIR = 'nodejs';
export const APP_DIR = 'app';

/** /etc/passwd, /etc/group, /etc/nsswitch.conf, a home for the non-root user and a world-writable /tmp. */
export function systemEntries(): TarEntry[] {
  const text = (path: string, s: string): TarEntry => ({ type: 'file', path, mode: 0o644, data: Buffer.from(s) });
  return [
    text(
      'etc/passwd',
      `root:x:0:0:root:/root:/sbin/nologin\n${NONROOT.name}:x:${NONROOT.uid}:${NONROOT.gid}:${NONROOT.name}:${NONROOT.home}:/sbin/nologin\n`,
    ),
    text('etc/group', `root:x:0:\n${NONROOT.name}:x:${NONROOT.gid}:\n`),
    // glibc's resolver defaults differ by version; name lookups go through /etc/hosts then DNS.
    text('etc/nsswitch.conf', 'passwd: files\ngroup: files\nhosts: files dns\n'),
    { type: 'dir', path: 'root', mode: 0o700 },
    { type: 'dir', path: NONROOT.home.slice(1), mode: 0o700, uid: NONROOT.uid, gid: NONROOT.gid },
    { type: 'dir', path: 'tmp', mode: 0o1777 },
  ];
}

const SHARED_LIBRARY = /^(usr\/)?lib(64)?(\/[a-z0-9_]+-linux-gnu)?\/[^/]+\.so(\.\d+)*$/;

/** Which files of a Debian package go into the image: shared libraries only, except for git. */
export function keepDebPath(pkg: string, path: string): boolean {
  const p = normalizePath(path);
  if (pkg === 'git')
    return [
      'usr/bin/git',
      'usr/lib/git-core/git',
      'usr/lib/git-core/git-remote-http',
      'usr/lib/git-core/git-remote-https',
    ].includes(p);
  if (pkg === 'ca-certificates') return false; // only the bundle made by caBundle
  return SHARED_LIBRARY.test(p);
}

/**
 * /etc/ssl/certs/ca-certificates.crt as update-ca-certificates writes it: the Mozilla roots the
 * package ships, concatenated in name order. Node does not need it (it has its own roots); git's
 * TLS does.
 */
export function caBundle(certs: ReadonlyArray<{ name: string; pem: string }>): TarEntry {
  if (certs.length === 0) throw new Error('ca-certificates: no certificates found in the package');
  const sorted = [...certs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const pem = sorted.map((c) => (c.pem.endsWith('\n') ? c.pem : `${c.pem}\n`)).join('');
  return { type: 'file', path: 'etc/ssl/certs/ca-certificates.crt', mode: 0o644, data: Buffer.from(pem) };
}

/**
 * Files with equal bytes and mode become hard links to the first (in archive order), so a binary
 * a package ships twice (git in /usr/bin and /usr/lib/git-core) is stored once.
 */
export function dedupeFiles(entries: readonly TarEntry[]): TarEntry[] {
  const sorted = [...entries].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  const first = new Map<string, string>();
  return sorted.map((e) => {
    if (e.type !== 'file') return e;
    const key = `${e.mode}:${e.uid ?? 0}:${e.gid ?? 0}:${createHash('sha256').update(e.data).digest('hex')}`;
    const target = first.get(key);
    if (!target) {
      first.set(key, e.path);
      return e;
    }
    return { type: 'hardlink', path: e.path, target, uid: e.uid, gid: e.gid };
  });
}

/**
 * Shared libraries some ELF file needs (DT_NEEDED) that no library directory of the image
 * provides, as `file: soname` lines; empty when the image is complete. `needs` maps image paths to
 * their DT_NEEDED names; `paths` are all paths in the image (files and symlinks).
 */
export function unresolvedLibraries(
  needs: Readonly<Record<string, readonly string[]>>,
  paths: readonly string[],
): string[] {
  const provided = new Set(
    paths.filter((p) => SHARED_LIBRARY.test(normalizePath(p))).map((p) => p.slice(p.lastIndexOf('/') + 1)),
  );
  const missing: string[] = [];
  for (const [file, sonames] of Object.entries(needs).sort(([a], [b]) => (a < b ? -1 : 1)))
    for (const so of sonames) if (!provided.has(so)) missing.push(`${file}: ${so}`);
  return missing;
}
