import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleApp, type SourceReader } from './bundle.js';
import { assembleImage, type Image, type Layer, layer } from './oci.js';
import { type Arch, BASE_DEBS, DEFAULT_SOURCE, type DebPin, GIT_DEBS, NODE, NONROOT } from './pins.js';
import { APP_DIR, caBundle, dedupeFiles, keepDebPath, NODE_DIR, systemEntries, unresolvedLibraries } from './rootfs.js';
import { debTree, elfNeeds, nodeDistribution, treeEntries } from './sources.js';
import type { TarEntry } from './tar.js';

/** The images kpromo ships: what each runs and which layers it has. */
export const APPS = {
  controller: {
    entry: 'controller/src/main.ts',
    file: 'kpromo-controller.mjs',
    packageJson: 'controller/package.json',
    description: 'kpromo promotion controller',
    // `git` delivery runs the git CLI.
    git: true,
    // The chart passes [run, --config, /etc/kpromo/config.yaml].
    cmd: ['run'],
    nodeFlags: [],
  },
  exporter: {
    entry: 'exporter/src/main.ts',
    file: 'kpromo-exporter.mjs',
    packageJson: 'exporter/package.json',
    description: 'kpromo exporter (Port / Backstage catalog mirror)',
    git: false,
    cmd: undefined,
    // Memory over speed (bench/exporter.ts --image, 10,000 objects; exporter/README.md): V8 sizes its
    // heap for memory (peak RSS 211 -> 146-157 MiB, ~1 s more CPU in the initial sync), and jq's
    // WebAssembly stays on V8's baseline compiler, without the optimising tier's code and compile
    // memory (-> 138-143 MiB; sync time and CPU unchanged: jq runs once per list page, not per object).
    nodeFlags: ['--optimize-for-size', '--liftoff-only'],
  },
} as const;
export type AppName = keyof typeof APPS;

export interface BuildMetadata {
  repoRoot: string;
  arch: Arch;
  /** Seconds since the epoch for every mtime and `created`: SOURCE_DATE_EPOCH or the commit time. */
  epoch: number;
  revision: string;
  source: string;
  licenses: string;
  /** Image version label; default: the app's package.json version. */
  version?: string;
}

const git = (repoRoot: string, args: string[]) =>
  execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/**
 * Build metadata from the checkout: the HEAD commit (with `-dirty` when the work tree has changes,
 * so the revision label never claims a commit the content does not match), its commit time unless
 * SOURCE_DATE_EPOCH is set, the `origin` remote as the source, the root package.json's license.
 */
export function metadataFromCheckout(repoRoot: string, o: Partial<BuildMetadata> = {}): BuildMetadata {
  const head = git(repoRoot, ['rev-parse', 'HEAD']);
  const dirty = git(repoRoot, ['status', '--porcelain']) !== ''; // untracked sources get bundled too
  const sde = process.env.SOURCE_DATE_EPOCH;
  if (sde !== undefined && !/^\d+$/.test(sde))
    throw new Error(`SOURCE_DATE_EPOCH must be whole seconds, got ${JSON.stringify(sde)}`);
  let origin = '';
  try {
    origin = git(repoRoot, ['remote', 'get-url', 'origin']);
  } catch {
    // no origin remote
  }
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { license?: string };
  return {
    repoRoot,
    arch: 'amd64',
    epoch: sde !== undefined ? Number(sde) : Number(git(repoRoot, ['log', '-1', '--format=%ct', 'HEAD'])),
    revision: dirty ? `${head}-dirty` : head,
    source: origin || DEFAULT_SOURCE,
    // SPDX's word for "not stated": the repository declares no license.
    licenses: pkg.license ?? 'NOASSERTION',
    ...o,
  };
}

type SourcedEntry = TarEntry & { source?: string };

/** Library closure check: every DT_NEEDED of every ELF file is provided inside the image. */
function checkLibraries(entries: readonly SourcedEntry[], what: string): void {
  const needs: Record<string, string[]> = {};
  for (const e of entries) if (e.type === 'file' && e.source) needs[e.path] = elfNeeds(e.source, e.data);
  const missing = unresolvedLibraries(
    needs,
    entries.map((e) => e.path),
  );
  if (missing.length)
    throw new Error(
      `${what}: shared libraries missing from the image (add their Debian packages to deploy/image/pins.ts):\n  ${missing.join('\n  ')}`,
    );
}

function debEntries(pins: readonly DebPin[], arch: Arch): SourcedEntry[] {
  const out: SourcedEntry[] = [];
  for (const pin of pins) {
    const tree = debTree(pin, arch);
    if (pin[0] === 'ca-certificates') {
      const certs = treeEntries(tree, (p) => /^usr\/share\/ca-certificates\/mozilla\/[^/]+\.crt$/.test(p));
      out.push(
        caBundle(
          certs.map((c) => ({ name: c.path, pem: c.type === 'file' ? Buffer.from(c.data).toString('utf8') : '' })),
        ),
      );
      continue;
    }
    out.push(...treeEntries(tree, (p) => keepDebPath(pin[0], p)));
  }
  return out;
}

/** Layers shared by every image (same bytes, so registries store them once). */
export interface SharedLayers {
  base: { layer: Layer; entries: SourcedEntry[] };
  node: { layer: Layer; entries: SourcedEntry[] };
  git: { layer: Layer; entries: SourcedEntry[] };
}

export function sharedLayers(m: BuildMetadata): SharedLayers {
  const baseEntries = dedupeFiles([...systemEntries(), ...debEntries(BASE_DEBS, m.arch)]) as SourcedEntry[];
  const node = nodeDistribution(m.arch);
  const nodeData = readFileSync(node.bin);
  const nodeEntries: SourcedEntry[] = [
    { type: 'file', path: `${NODE_DIR}/bin/node`, mode: 0o755, data: nodeData, source: node.bin },
    { type: 'file', path: `${NODE_DIR}/LICENSE`, mode: 0o644, data: readFileSync(node.license) },
  ];
  // Debian ships git twice (/usr/bin/git and /usr/lib/git-core/git): stored once as a hard link.
  const gitEntries = dedupeFiles(debEntries(GIT_DEBS, m.arch)) as SourcedEntry[];
  const debs = (pins: readonly DebPin[]) => pins.map(([n, v]) => `${n}=${v}`).join(' ');
  return {
    base: { entries: baseEntries, layer: layer(baseEntries, m.epoch, `accounts, /tmp; debian: ${debs(BASE_DEBS)}`) },
    node: {
      entries: nodeEntries,
      layer: layer(nodeEntries, m.epoch, `node ${NODE.version} (npm ${NODE.packages[m.arch].name})`),
    },
    git: { entries: gitEntries, layer: layer(gitEntries, m.epoch, `git for git delivery; debian: ${debs(GIT_DEBS)}`) },
  };
}

export async function buildImage(
  name: AppName,
  m: BuildMetadata,
  shared: SharedLayers,
  readSource?: SourceReader,
): Promise<{ image: Image; version: string }> {
  const app = APPS[name];
  const bundle = await bundleApp({ entry: app.entry, name: app.file, repoRoot: m.repoRoot, readSource });
  const appEntries: TarEntry[] = [{ type: 'file', path: `${APP_DIR}/${app.file}`, mode: 0o644, data: bundle.code }];
  const parts = [shared.base, shared.node, ...(app.git ? [shared.git] : [])];
  checkLibraries(
    parts.flatMap((p) => p.entries),
    `image ${name}`,
  );
  const version =
    m.version ?? (JSON.parse(readFileSync(join(m.repoRoot, app.packageJson), 'utf8')) as { version: string }).version;
  const created = new Date(m.epoch * 1000).toISOString();
  const image = assembleImage(
    {
      platform: { architecture: m.arch, os: 'linux' },
      created,
      user: `${NONROOT.uid}:${NONROOT.gid}`,
      entrypoint: [`/${NODE_DIR}/bin/node`, ...app.nodeFlags, `/${APP_DIR}/${app.file}`],
      cmd: app.cmd ? [...app.cmd] : undefined,
      // MALLOC_ARENA_MAX=2: glibc's per-thread arenas (8 per core) fragment during the start burst
      // (thousands of objects listed at once); 2 arenas held the controller at 3,000 Applications
      // to 185 MiB RSS instead of 216-229 MiB (docs/benchmarks.md, steady state). Node's JS heap is unaffected.
      env: ['PATH=/nodejs/bin:/usr/local/bin:/usr/bin:/bin', 'NODE_ENV=production', 'MALLOC_ARENA_MAX=2'],
      workingDir: `/${APP_DIR}`,
      labels: {
        'org.opencontainers.image.created': created,
        'org.opencontainers.image.description': app.description,
        'org.opencontainers.image.licenses': m.licenses,
        'org.opencontainers.image.revision': m.revision,
        'org.opencontainers.image.source': m.source,
        'org.opencontainers.image.title': `kpromo-${name}`,
        'org.opencontainers.image.version': version,
      },
    },
    [...parts.map((p) => p.layer), layer(appEntries, m.epoch, `app: ${app.file} (esbuild bundle of ${app.entry})`)],
  );
  return { image, version };
}
