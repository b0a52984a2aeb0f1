import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { REPO_ROOT } from './cluster/paths.js';

// The README's first command: `yarn demo` (here with --once and its own namespace/ports) must take a
// newcomer from nothing to two completed promotions on the local clusters.
it('yarn demo --once promotes the sample release dev -> stable -> prod', async () => {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // 0: the registries pick free ports themselves and pick again if one is taken before they bind
    // (a port found free here could be taken by the files running beside this one).
    KPROMO_DEMO_REGISTRY_PORT: '0',
    KPROMO_LOG_LEVEL: 'warn',
  };
  delete env.KUBECONFIG; // no kubeconfig given = local control plane mode
  const args = [join(REPO_ROOT, 'node_modules/tsx/dist/cli.mjs'), join(REPO_ROOT, 'scripts/demo.ts')];
  const child = spawn(process.execPath, [...args, '--once', '--port', '0', '--namespace', 'demo-test'], {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  expect(code, out.slice(-3000)).toBe(0);
  expect(out.match(/: Complete \(4 succeeded, 0 failed\)/g)).toHaveLength(2);
  expect(out).toMatch(/checkout\s+Succeeded\s+v1\.1\.0-\d{8}T\d{6}Z/);
  // The final versions as a table, not JSON: every app runs v1.1.0 everywhere now (✓ = Healthy).
  expect(out).toMatch(/application\s+dev\s+stable\s+prod/);
  expect(out).toMatch(/checkout\s+v1\.1\.0 (✓|\w+)\s+v1\.1\.0-\d{8}T\d{6}Z (✓|\w+)\s+v1\.1\.0-\d{8}T\d{6}Z (✓|\w+)/);
  expect(out).not.toContain('"versions"');
  expect(out).toContain('demo finished in');
}, 300_000);
