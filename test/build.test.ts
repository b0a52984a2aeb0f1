// The production build: `yarn build` bundles the controller and the exporter so plain `node` runs
// them (no tsx loader, no TypeScript at run time), as the container image and the Helm chart do.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './cluster/paths.js';

/** Plain node: NODE_OPTIONS cleared so no loader from the test runner leaks in. */
const node = (...args: string[]) =>
  spawnSync(process.execPath, args, {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
    timeout: 60_000,
  });

describe('yarn build', () => {
  beforeAll(() => {
    const r = spawnSync('yarn', ['build'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr || r.stdout).toBe(0);
  }, 150_000);

  it('writes one bundle per deployable with a source map', () => {
    for (const f of ['controller/dist/kpromo-controller.mjs', 'exporter/dist/kpromo-exporter.mjs']) {
      expect(existsSync(join(REPO_ROOT, f)), f).toBe(true);
      expect(existsSync(join(REPO_ROOT, `${f}.map`)), `${f}.map`).toBe(true);
    }
  });

  it('the controller bundle runs under plain node and only serves (run, mcp): the user CLI is kpromo', () => {
    const r = node('controller/dist/kpromo-controller.mjs', '--help');
    expect(r.status, r.stderr).toBe(0);
    for (const cmd of ['run', 'mcp']) expect(r.stdout).toMatch(new RegExp(`^\\s+${cmd}\\b`, 'm'));
    for (const cmd of ['plan', 'apps', 'diff']) expect(r.stdout).not.toMatch(new RegExp(`^\\s+${cmd}\\b`, 'm'));
  }, 60_000);

  it('both bundles print the package version with --version', () => {
    for (const [bundle, pkg] of [
      ['controller/dist/kpromo-controller.mjs', 'controller/package.json'],
      ['exporter/dist/kpromo-exporter.mjs', 'exporter/package.json'],
    ]) {
      const r = node(bundle, '--version');
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe(JSON.parse(readFileSync(join(REPO_ROOT, pkg), 'utf8')).version);
    }
  }, 60_000);

  it('the exporter bundle runs under plain node; a missing config is a one-line error, not a stack trace', () => {
    const help = node('exporter/dist/kpromo-exporter.mjs', '--help');
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain('Usage: kpromo-exporter [config.yaml]');
    const missing = node('exporter/dist/kpromo-exporter.mjs', '/nonexistent/exporter.yaml');
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('/nonexistent/exporter.yaml');
    expect(missing.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);
});
