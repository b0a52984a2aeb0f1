import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type Arch, type DebPin, NODE } from './pins.js';
import type { TarEntry } from './tar.js';

/**
 * Fetching what goes into the images, cached by exact version under $PROMO_CACHE_DIR/image (the
 * same cache the Go components use): Debian packages with `apt-get download`, Node with `npm pack`.
 * A cache entry is written to a temporary name and renamed when complete, so an interrupted build
 * never leaves a half entry behind.
 */

export function cacheDir(...parts: string[]): string {
  const root = process.env.PROMO_CACHE_DIR ?? join(process.env.HOME ?? '/tmp', '.cache/kube-promotions');
  const dir = join(root, 'image', ...parts);
  mkdirSync(dir, { recursive: true });
  return dir;
}

function run(cmd: string, args: string[], cwd: string, what: string): string {
  try {
    return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`${what}: ${cmd} ${args.join(' ')} failed: ${(err.stderr || err.message).trim()}`);
  }
}

/** Debian's architecture name for an OCI one. */
const DEB_ARCH: Record<Arch, string> = { amd64: 'amd64' };

/**
 * The package's files, unpacked with `dpkg-deb -x` into the cache. Only the build machine's own
 * architecture can be downloaded without reconfiguring apt (dpkg --add-architecture).
 */
export function debTree([name, version]: DebPin, arch: Arch): string {
  const host = run('dpkg', ['--print-architecture'], '/', 'dpkg').trim();
  if (DEB_ARCH[arch] !== host)
    throw new Error(
      `debian package ${name}: cannot fetch ${arch} packages on a ${host} machine (apt has no ${arch} lists)`,
    );
  const key = `${name}_${version.replaceAll(':', '%3a')}_${host}`;
  const dir = cacheDir('debs', host);
  const tree = join(dir, key);
  if (existsSync(tree)) return tree;
  const deb = join(dir, `${key}.deb`);
  if (!existsSync(deb)) {
    const tmp = join(dir, `.download-${process.pid}`);
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp);
    try {
      run(
        'apt-get',
        ['download', '-q', `${name}=${version}`],
        tmp,
        `debian package ${name}=${version} (if the mirror no longer has this version, bump it in deploy/image/pins.ts to \`apt-cache policy ${name}\`'s candidate)`,
      );
      const got = readdirSync(tmp).filter((f) => f.endsWith('.deb'));
      if (got.length !== 1)
        throw new Error(`debian package ${name}=${version}: apt-get download left ${got.join(', ') || 'no .deb'}`);
      renameSync(join(tmp, got[0]), deb);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  const tmpTree = `${tree}.tmp-${process.pid}`;
  rmSync(tmpTree, { recursive: true, force: true });
  run('dpkg-deb', ['-x', deb, tmpTree], dir, `unpack ${deb}`);
  renameSync(tmpTree, tree);
  return tree;
}

/**
 * Tar entries for the files under `root` that `keep` accepts (paths relative to root), owned by
 * root, with the package's permission bits. Directories are implied by their contents.
 */
export function treeEntries(root: string, keep: (path: string) => boolean): Array<TarEntry & { source: string }> {
  const out: Array<TarEntry & { source: string }> = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const abs = join(dir, name);
      const path = relative(root, abs);
      const st = lstatSync(abs);
      if (st.isDirectory()) walk(abs);
      else if (!keep(path)) continue;
      else if (st.isSymbolicLink()) out.push({ type: 'symlink', path, target: readlinkSync(abs), source: abs });
      else if (st.isFile())
        out.push({ type: 'file', path, mode: st.mode & 0o7777, data: readFileSync(abs), source: abs });
      else throw new Error(`${abs}: unsupported file type in a package (only files and symlinks are copied)`);
    }
  };
  walk(root);
  return out;
}

/** The official Node binary and its LICENSE from the npm package for `arch`, checked against the pinned integrity. */
export function nodeDistribution(arch: Arch): { bin: string; license: string } {
  const pkg = NODE.packages[arch];
  const dir = cacheDir('node', `${pkg.name}-${NODE.version}`);
  const bin = join(dir, 'bin/node');
  const license = join(dir, 'LICENSE');
  if (existsSync(bin) && existsSync(license)) return { bin, license };
  const tmp = join(dir, `.pack-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp);
  try {
    run('npm', ['pack', '--silent', `${pkg.name}@${NODE.version}`], tmp, `npm pack ${pkg.name}@${NODE.version}`);
    const tgz = join(tmp, `${pkg.name}-${NODE.version}.tgz`);
    const [algo, expected] = pkg.integrity.split('-', 2);
    const actual = createHash(algo).update(readFileSync(tgz)).digest('base64');
    if (actual !== expected)
      throw new Error(
        `${pkg.name}@${NODE.version}: tarball ${algo} is ${actual}, deploy/image/pins.ts pins ${expected}`,
      );
    run('tar', ['-xzf', tgz, '-C', tmp, 'package/bin/node', 'package/LICENSE'], tmp, `unpack ${tgz}`);
    mkdirSync(join(dir, 'bin'), { recursive: true });
    renameSync(join(tmp, 'package/LICENSE'), license);
    renameSync(join(tmp, 'package/bin/node'), bin);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { bin, license };
}

/** DT_NEEDED entries of an ELF file (readelf from binutils); empty for anything that is not ELF. */
export function elfNeeds(file: string, data: Uint8Array): string[] {
  if (Buffer.from(data.subarray(0, 4)).toString('latin1') !== '\x7fELF') return [];
  const out = run('readelf', ['-d', '-W', file], '/', `readelf ${file}`);
  return [...out.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
}
