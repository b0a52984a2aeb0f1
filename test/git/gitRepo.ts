import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** Runs git in `cwd` as the test identity; returns its trimmed output. */
export const runGit = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'kpromo-test',
      GIT_AUTHOR_EMAIL: 'test@kpromo.local',
      GIT_COMMITTER_NAME: 'kpromo-test',
      GIT_COMMITTER_EMAIL: 'test@kpromo.local',
    },
  }).trim();
const git = runGit;

/** Writes `files` (path → content) under `dir`, creating folders. */
export function writeTree(dir: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
}

/** A real bare git repository seeded with `files` on `branch`; its file:// URL works as a GitOps remote. */
export function createBareRepo(
  files: Record<string, string>,
  branch = 'main',
): { url: string; dir: string; log(): string[]; read(path: string): string } {
  const root = mkdtempSync(join(tmpdir(), 'kpromo-git-'));
  const bare = join(root, 'remote.git');
  const work = join(root, 'seed');
  mkdirSync(work);
  git(root, 'init', '--bare', '-q', '-b', branch, bare);
  git(work, 'init', '-q', '-b', branch);
  writeTree(work, files);
  git(work, 'add', '-A');
  git(work, 'commit', '-q', '-m', 'seed');
  git(work, 'push', '-q', bare, branch);
  return {
    url: `file://${bare}`,
    dir: bare,
    log: () => git(bare, 'log', '--format=%s', branch).split('\n'),
    read: (path: string) => git(bare, 'show', `${branch}:${path}`),
  };
}
