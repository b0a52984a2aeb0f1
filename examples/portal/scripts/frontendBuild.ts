// The example portal's frontend build, kept by the hash of everything it is built from.
//
// `backstage-cli package build` takes a minute or two of both cores, and the portal's browser test
// asks for a fresh build every run. A build is a function of its inputs: the app's package, the
// workspace packages it bundles (found from the package.jsons, so a new plugin dependency is
// covered), the lockfile and the build's own configuration. The same inputs reuse the build kept
// under the harness's cache; any change to one of them (committed or not) builds again.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
} from 'node:fs';
import { join } from 'node:path';

/** How many builds the cache keeps (the newest): one per branch or two someone switches between. */
const KEEP = 3;

/** Workspace folder by package name, from the root package.json's `workspaces` (`dir` or `dir/*`). */
function workspaceDirs(repo: string): Map<string, string> {
  const patterns: string[] = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).workspaces ?? [];
  const dirs = patterns.flatMap((p) => {
    if (!p.endsWith('/*')) return [p];
    const parent = p.slice(0, -2);
    return existsSync(join(repo, parent)) ? readdirSync(join(repo, parent)).map((d) => `${parent}/${d}`) : [];
  });
  const byName = new Map<string, string>();
  for (const d of dirs) {
    const pkg = join(repo, d, 'package.json');
    if (existsSync(pkg)) byName.set(JSON.parse(readFileSync(pkg, 'utf8')).name, d);
  }
  return byName;
}

/** The workspace packages `app` bundles: itself, its workspace dependencies, and theirs. */
export function bundledWorkspaces(repo: string, app: string): string[] {
  const byName = workspaceDirs(repo);
  const seen = new Set<string>();
  const visit = (location: string) => {
    if (seen.has(location)) return;
    seen.add(location);
    const pkg = JSON.parse(readFileSync(join(repo, location, 'package.json'), 'utf8'));
    for (const [name, range] of Object.entries<string>(pkg.dependencies ?? {})) {
      const dep = byName.get(name);
      if (dep && range.startsWith('workspace:')) visit(dep);
    }
  };
  visit(app);
  return [...seen].sort();
}

/** sha256 over the build's inputs: every file git would see in `dirs` (tracked or new), and `files`. */
export function inputsHash(repo: string, dirs: string[], files: string[]): string {
  const listed = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z', '--', ...dirs], {
    cwd: repo,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
    .split('\0')
    .filter(Boolean);
  const h = createHash('sha256');
  for (const f of [...new Set([...listed, ...files])].sort()) {
    const p = join(repo, f);
    if (!existsSync(p)) continue; // deleted in the work tree but still in the index
    h.update(`${f}\0`).update(readFileSync(p)).update('\0');
  }
  return h.digest('hex').slice(0, 32);
}

/**
 * Puts a build of the current inputs into `dist`: the kept one when the inputs are the same, else
 * runs `build` and keeps its output. Returns whether it built.
 */
export function ensureFrontendBuild(o: {
  repo: string;
  app: string;
  /** Files outside the bundled packages that decide the build (config, resolver hooks). */
  extraInputs: string[];
  cacheDir: string;
  build: () => void;
}): { built: boolean; hash: string } {
  const hash = inputsHash(o.repo, bundledWorkspaces(o.repo, o.app), ['yarn.lock', 'package.json', ...o.extraInputs]);
  const dist = join(o.repo, o.app, 'dist');
  const kept = join(o.cacheDir, hash);
  if (existsSync(join(kept, 'index.html.tmpl'))) {
    rmSync(dist, { recursive: true, force: true });
    cpSync(kept, dist, { recursive: true });
    const now = new Date();
    utimesSync(kept, now, now); // the newest used is the last pruned
    return { built: false, hash };
  }
  o.build();
  // Copied under a temporary name and renamed: a build interrupted half-way is never reused.
  mkdirSync(o.cacheDir, { recursive: true });
  const tmp = `${kept}.tmp-${process.pid}`;
  cpSync(dist, tmp, { recursive: true });
  rmSync(kept, { recursive: true, force: true });
  renameSync(tmp, kept);
  prune(o.cacheDir);
  return { built: true, hash };
}

function prune(cacheDir: string) {
  const builds = readdirSync(cacheDir)
    .filter((n) => /^[0-9a-f]{32}$/.test(n))
    .map((n) => ({ n, t: statSync(join(cacheDir, n)).mtimeMs }))
    .sort((a, b) => b.t - a.t);
  for (const { n } of builds.slice(KEEP)) rmSync(join(cacheDir, n), { recursive: true, force: true });
}
