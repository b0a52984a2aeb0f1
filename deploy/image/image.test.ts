import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { pushTargets } from './buildImage.js';
import { runtimeRequires, snapshotReader } from './bundle.js';
import { assembleImage, imageIndex, layer, MEDIA_TYPES, sha256 } from './oci.js';
import { parseImageRef } from './push.js';
import { caBundle, dedupeFiles, keepDebPath, systemEntries, unresolvedLibraries } from './rootfs.js';
import { orderEntries, type TarEntry, tarArchive } from './tar.js';

const file = (path: string, text: string, mode = 0o644): TarEntry => ({
  type: 'file',
  path,
  mode,
  data: Buffer.from(text),
});
const EPOCH = 1_700_000_000;
const textOf = (e: TarEntry | undefined) => (e?.type === 'file' ? Buffer.from(e.data).toString() : '');

/** GNU tar's own reading of an archive: `mode owner size date name[ -> target]` per entry. */
function gnuTarList(archive: Buffer): string[] {
  const f = join(mkdtempSync(join(tmpdir(), 'kpromo-tar-')), 'a.tar');
  writeFileSync(f, archive);
  return execFileSync('tar', ['-tvf', f, '--numeric-owner', '--full-time'], { encoding: 'utf8', env: { TZ: 'UTC' } })
    .trim()
    .split('\n')
    .map((l) => l.replace(/\s+/g, ' '));
}

describe('deterministic layer tar', () => {
  const entries: TarEntry[] = [
    file('usr/bin/tool', '#!x', 0o755),
    { type: 'symlink', path: 'lib64/ld.so', target: '/lib/x86_64-linux-gnu/ld.so' },
    file('etc/passwd', 'root:x:0:0::/:/sbin/nologin\n'),
    { type: 'dir', path: 'tmp', mode: 0o1777 },
    { type: 'hardlink', path: 'usr/lib/tool', target: 'usr/bin/tool' },
    file(`deep/${'d'.repeat(120)}/file`, 'long'),
  ];

  it('same entries in any order give the same bytes; a different mtime does not', () => {
    const a = tarArchive(entries, EPOCH);
    expect(tarArchive([...entries].reverse(), EPOCH).equals(a)).toBe(true);
    expect(tarArchive(entries, EPOCH + 1).equals(a)).toBe(false);
    expect(layer(entries, EPOCH, 'x').blob.digest).toBe(layer([...entries].reverse(), EPOCH, 'x').blob.digest);
  });

  it('GNU tar reads it: sorted paths, parents added, fixed owner and mtime, modes, links, long names via PAX', () => {
    const list = gnuTarList(tarArchive(entries, EPOCH));
    const names = list.map((l) => l.split(' ').slice(5).join(' '));
    expect(names).toEqual([
      'deep/',
      `deep/${'d'.repeat(120)}/`,
      `deep/${'d'.repeat(120)}/file`,
      'etc/',
      'etc/passwd',
      'lib64/',
      'lib64/ld.so -> /lib/x86_64-linux-gnu/ld.so',
      'tmp/',
      'usr/',
      'usr/bin/',
      'usr/bin/tool',
      'usr/lib/',
      'usr/lib/tool link to usr/bin/tool',
    ]);
    for (const l of list) expect(l).toContain(' 0/0 ');
    for (const l of list) expect(l).toContain('2023-11-14 22:13:20');
    expect(list.find((l) => l.endsWith('tmp/'))).toMatch(/^drwxrwxrwt /);
    expect(list.find((l) => l.endsWith('usr/bin/tool'))).toMatch(/^-rwxr-xr-x /);
  });

  it('refuses paths that escape the root, duplicates, and hard links to nothing earlier', () => {
    expect(() => tarArchive([file('../etc/x', '')], EPOCH)).toThrow(/invalid path/);
    expect(() => tarArchive([file('a', ''), file('/a', '')], EPOCH)).toThrow(/added twice/);
    expect(() => orderEntries([{ type: 'hardlink', path: 'a', target: 'b' }, file('b', '')])).toThrow(/hard link a/);
    expect(() => orderEntries([file('a', ''), file('a/b', '')])).toThrow(/a is a file/);
  });

  it('a layer records the digest of the uncompressed tar as its diff id', () => {
    const l = layer(entries, EPOCH, 'x');
    expect(l.blob.mediaType).toBe(MEDIA_TYPES.ociLayerGzip);
    expect(l.diffId).toBe(sha256(gunzipSync(l.blob.bytes)));
    expect(l.blob.digest).toBe(sha256(l.blob.bytes));
  });
});

describe('OCI documents', () => {
  const settings = {
    platform: { architecture: 'amd64', os: 'linux' },
    created: '2023-11-14T22:13:20.000Z',
    user: '65532:65532',
    entrypoint: ['/nodejs/bin/node', '/app/a.mjs'],
    cmd: ['run'],
    env: ['PATH=/nodejs/bin:/usr/bin:/bin', 'NODE_ENV=production'],
    workingDir: '/app',
    labels: { 'org.opencontainers.image.title': 't', 'org.opencontainers.image.created': '2023-11-14T22:13:20.000Z' },
  };
  const layers = [layer([file('a', '1')], EPOCH, 'one'), layer([file('b', '2')], EPOCH, 'two')];

  it('manifest and config carry the image-spec required fields and descriptors that match the blobs', () => {
    const img = assembleImage(settings, layers);
    const m = JSON.parse(img.manifest.bytes.toString());
    expect(m.schemaVersion).toBe(2);
    expect(m.mediaType).toBe(MEDIA_TYPES.ociManifest);
    expect(m.config).toEqual({
      mediaType: MEDIA_TYPES.ociConfig,
      digest: img.config.digest,
      size: img.config.bytes.length,
    });
    expect(m.layers).toEqual(
      layers.map((l) => ({ mediaType: MEDIA_TYPES.ociLayerGzip, digest: l.blob.digest, size: l.blob.size })),
    );
    const c = JSON.parse(img.config.bytes.toString());
    expect(c).toMatchObject({
      architecture: 'amd64',
      os: 'linux',
      rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) },
    });
    expect(c.config).toEqual({
      User: '65532:65532',
      Env: settings.env,
      Entrypoint: settings.entrypoint,
      Cmd: ['run'],
      WorkingDir: '/app',
      Labels: settings.labels,
    });
    expect(c.history.map((h: { comment: string }) => h.comment)).toEqual(['one', 'two']);
    expect(img.manifest.digest).toBe(sha256(img.manifest.bytes));
  });

  it('labels are written in sorted order, so their insertion order does not change the digest', () => {
    const reordered = { ...settings, labels: Object.fromEntries(Object.entries(settings.labels).reverse()) };
    expect(assembleImage(reordered, layers).manifest.digest).toBe(assembleImage(settings, layers).manifest.digest);
    expect(assembleImage({ ...settings, created: '2024-01-01T00:00:00.000Z' }, layers).manifest.digest).not.toBe(
      assembleImage(settings, layers).manifest.digest,
    );
  });

  it('an index lists manifests with their platform', () => {
    const img = assembleImage(settings, layers);
    const idx = JSON.parse(
      imageIndex([
        {
          mediaType: img.manifest.mediaType,
          digest: img.manifest.digest,
          size: img.manifest.size,
          platform: img.platform,
        },
      ]).bytes.toString(),
    );
    expect(idx).toEqual({
      schemaVersion: 2,
      mediaType: MEDIA_TYPES.ociIndex,
      manifests: [
        {
          mediaType: MEDIA_TYPES.ociManifest,
          digest: img.manifest.digest,
          size: img.manifest.size,
          platform: settings.platform,
        },
      ],
    });
  });
});

describe('root file system decisions', () => {
  it('the non-root account 65532 and a sticky world-writable /tmp', () => {
    const e = Object.fromEntries(systemEntries().map((x) => [x.path, x]));
    expect(textOf(e['etc/passwd'])).toContain('nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin');
    expect(textOf(e['etc/group'])).toContain('nonroot:x:65532:');
    expect(e.tmp).toMatchObject({ type: 'dir', mode: 0o1777 });
    expect(e['home/nonroot']).toMatchObject({ type: 'dir', uid: 65532, gid: 65532 });
  });

  it('keeps shared libraries and the git binaries, drops docs, gconv modules, tools and the rest of git', () => {
    expect(keepDebPath('libc6', 'lib/x86_64-linux-gnu/libc.so.6')).toBe(true);
    expect(keepDebPath('libc6', './lib64/ld-linux-x86-64.so.2')).toBe(true);
    expect(keepDebPath('libstdc++6', 'usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30')).toBe(true);
    expect(keepDebPath('libc6', 'usr/lib/x86_64-linux-gnu/gconv/UTF-16.so')).toBe(false);
    expect(keepDebPath('libc6', 'usr/share/doc/libc6/copyright')).toBe(false);
    expect(keepDebPath('libc6', 'sbin/ldconfig')).toBe(false);
    expect(keepDebPath('git', 'usr/lib/git-core/git-remote-https')).toBe(true);
    expect(keepDebPath('git', 'usr/lib/git-core/git-svn')).toBe(false);
    expect(keepDebPath('ca-certificates', 'usr/share/ca-certificates/mozilla/A.crt')).toBe(false);
  });

  it('the CA bundle concatenates certificates in name order', () => {
    const b = caBundle([
      { name: 'b.crt', pem: 'B' },
      { name: 'a.crt', pem: 'A\n' },
    ]);
    expect(b).toMatchObject({ path: 'etc/ssl/certs/ca-certificates.crt' });
    expect(textOf(b)).toBe('A\nB\n');
    expect(() => caBundle([])).toThrow(/no certificates/);
  });

  it('identical files become hard links to the first in archive order', () => {
    const out = dedupeFiles([
      file('usr/lib/git-core/git', 'ELF', 0o755),
      file('usr/bin/git', 'ELF', 0o755),
      file('x', 'ELF'),
    ]);
    expect(out).toEqual([
      file('usr/bin/git', 'ELF', 0o755),
      { type: 'hardlink', path: 'usr/lib/git-core/git', target: 'usr/bin/git', uid: undefined, gid: undefined },
      file('x', 'ELF'),
    ]);
  });

  it('reports every needed shared library no library directory provides', () => {
    const paths = ['lib/x86_64-linux-gnu/libc.so.6', 'lib64/ld-linux-x86-64.so.2', 'opt/libfoo.so.1'];
    expect(unresolvedLibraries({ 'nodejs/bin/node': ['libc.so.6', 'ld-linux-x86-64.so.2'] }, paths)).toEqual([]);
    expect(unresolvedLibraries({ 'usr/bin/git': ['libc.so.6', 'libz.so.1', 'libfoo.so.1'] }, paths)).toEqual([
      'usr/bin/git: libz.so.1',
      'usr/bin/git: libfoo.so.1',
    ]);
  });
});

describe('bundle and CLI checks', () => {
  it('a snapshot reader keeps serving the first content it read of a file', async () => {
    const f = join(mkdtempSync(join(tmpdir(), 'kpromo-snap-')), 'a.ts');
    writeFileSync(f, 'export const a = 1;');
    const read = snapshotReader();
    expect(await read(f)).toBe('export const a = 1;');
    writeFileSync(f, 'export const a = 2;');
    expect(await read(f)).toBe('export const a = 1;');
    expect(await snapshotReader()(f)).toBe('export const a = 2;');
  });

  it('finds packages a bundle would still resolve at run time through createRequire', () => {
    expect(runtimeRequires('var { RRule } = createRequire(import.meta.url)("rrule");')).toEqual(['rrule']);
    expect(runtimeRequires('const r = createRequire2(import.meta.url)(\'x/y\'); createRequire(u)("node:fs")')).toEqual([
      'x/y',
    ]);
    expect(runtimeRequires('const fs = __require("fs");')).toEqual([]);
  });

  it('parses push references and refuses ones without a registry host', () => {
    expect(parseImageRef('127.0.0.1:5000/kpromo/controller:0.1.0')).toEqual({
      host: '127.0.0.1:5000',
      repository: 'kpromo/controller',
      tag: '0.1.0',
    });
    expect(parseImageRef('localhost/kpromo/exporter:dev')).toMatchObject({
      host: 'localhost',
      repository: 'kpromo/exporter',
    });
    expect(() => parseImageRef('kpromo/controller:1')).toThrow(/expected host/);
    expect(() => parseImageRef('127.0.0.1:5000/kpromo/controller')).toThrow(/expected host/);
  });

  it('--push is a prefix for several images, or one full reference for one image', () => {
    expect(pushTargets('127.0.0.1:5000/kpromo', ['controller', 'exporter'], '0.1.0')).toEqual({
      controller: '127.0.0.1:5000/kpromo/controller:0.1.0',
      exporter: '127.0.0.1:5000/kpromo/exporter:0.1.0',
    });
    expect(pushTargets('127.0.0.1:5000/x/ctl:dev', ['controller'], '0.1.0')).toEqual({
      controller: '127.0.0.1:5000/x/ctl:dev',
    });
    expect(() => pushTargets('127.0.0.1:5000/x/ctl:dev', ['controller', 'exporter'], '1')).toThrow(
      /exactly one --image/,
    );
  });
});
