import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { bundledWorkspaces, ensureFrontendBuild } from './frontendBuild.js';

/** A git repo with two workspaces: `app` depends on `lib` (workspace:*) and on an npm package. */
function repoWithApp(): string {
  const repo = mkdtempSync(join(tmpdir(), 'kpromo-frontend-build-'));
  const write = (path: string, body: string) => {
    mkdirSync(join(repo, path, '..'), { recursive: true });
    writeFileSync(join(repo, path), body);
  };
  write('package.json', JSON.stringify({ workspaces: ['packages/*', 'tools'] }));
  write('yarn.lock', 'lock v1\n');
  write(
    'packages/app/package.json',
    JSON.stringify({ name: 'app', dependencies: { lib: 'workspace:*', react: '^18' } }),
  );
  write('packages/app/src/index.ts', 'export const a = 1;\n');
  write('packages/lib/package.json', JSON.stringify({ name: 'lib' }));
  write('packages/lib/src/index.ts', 'export const b = 1;\n');
  write('packages/other/package.json', JSON.stringify({ name: 'other' }));
  write('packages/other/src/index.ts', 'export const c = 1;\n');
  write('tools/package.json', JSON.stringify({ name: 'tools', dependencies: { other: 'workspace:*' } }));
  write('.gitignore', 'dist/\n');
  execFileSync('git', ['init', '-q'], { cwd: repo });
  execFileSync('git', ['add', '.'], { cwd: repo });
  return repo;
}

describe('the example portal frontend build, kept by its inputs', () => {
  let repo: string;
  let builds: number;
  const ensure = () =>
    ensureFrontendBuild({
      repo,
      app: 'packages/app',
      extraInputs: [],
      cacheDir: join(repo, '.cache/portal-frontend'),
      build: () => {
        builds++;
        mkdirSync(join(repo, 'packages/app/dist'), { recursive: true });
        writeFileSync(join(repo, 'packages/app/dist/index.html.tmpl'), `build ${builds}`);
      },
    });
  const served = () => readFileSync(join(repo, 'packages/app/dist/index.html.tmpl'), 'utf8');
  beforeEach(() => {
    repo = repoWithApp();
    builds = 0;
  });

  it('bundles the app and the workspace packages it depends on, not the others', () => {
    expect(bundledWorkspaces(repo, 'packages/app')).toEqual(['packages/app', 'packages/lib']);
  });

  it('reuses the kept build while nothing changes, even after dist is deleted', () => {
    expect(ensure().built).toBe(true);
    expect(ensure().built).toBe(false);
    execFileSync('rm', ['-rf', join(repo, 'packages/app/dist')]);
    expect(ensure().built).toBe(false);
    expect(served()).toBe('build 1');
    expect(builds).toBe(1);
  });

  it.each([
    ['an uncommitted edit in a bundled package', 'packages/lib/src/index.ts'],
    ['a new, untracked file in the app', 'packages/app/src/new.ts'],
    ['the lockfile', 'yarn.lock'],
  ])('builds again after %s', (_, path) => {
    ensure();
    writeFileSync(join(repo, path), '// changed\n');
    expect(ensure().built).toBe(true);
    expect(served()).toBe('build 2');
  });

  it('does not build again for a change in a package the app does not bundle', () => {
    ensure();
    writeFileSync(join(repo, 'packages/other/src/index.ts'), '// changed\n');
    expect(ensure().built).toBe(false);
  });

  it('keeps the three newest builds', () => {
    for (let i = 0; i < 5; i++) {
      writeFileSync(join(repo, 'packages/app/src/index.ts'), `export const a = ${i};\n`);
      ensure();
    }
    expect(readdirSync(join(repo, '.cache/portal-frontend'))).toHaveLength(3);
  });
});
