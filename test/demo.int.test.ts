import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { needComponents } from './cluster/need.js';
import { REPO_ROOT } from './cluster/paths.js';

// The story signs its images with cosign (and checks the promotion's record with it) and verifies
// releases in stable against a real Prometheus.
await needComponents('cosign', 'prometheus');

/** `yarn demo <args> --once` in its own namespace and ports: exit code and everything it printed. */
async function demo(namespace: string, ...args: string[]): Promise<{ code: number | null; out: string }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // 0: the registries pick free ports themselves and pick again if one is taken before they bind
    // (a port found free here could be taken by the files running beside this one).
    KPROMO_DEMO_REGISTRY_PORT: '0',
    KPROMO_LOG_LEVEL: 'warn',
  };
  delete env.KUBECONFIG; // no kubeconfig given = local control plane mode
  const tsx = join(REPO_ROOT, 'node_modules/tsx/dist/cli.mjs');
  const child = spawn(
    process.execPath,
    [tsx, join(REPO_ROOT, 'scripts/demo.ts'), ...args, '--once', '--port', '0', '--namespace', namespace],
    { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  // Colours off for the assertions: the demo prints them for a terminal.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences
  return { code, out: out.replace(/\x1b\[[0-9;]*m/g, '') };
}

/** The text printed from the line matching `from` up to the next step's heading. */
const stepText = (out: string, from: RegExp) => {
  const start = out.search(from);
  expect(start, `no step ${from} in:\n${out.slice(-3000)}`).toBeGreaterThanOrEqual(0);
  const rest = out.slice(start + 1);
  const end = rest.search(/\n\[\d+\/\d+\] /);
  return end < 0 ? rest : rest.slice(0, end);
};

// The README's first command: `yarn demo` (here with --once) must take a newcomer from nothing to
// the whole story on the local clusters, each step's outcome checked here.
describe('yarn demo --once', () => {
  it('tells the story: a prod fleet, signed releases, the right approvers, waves, a rollback, a line stop, and a verified record', async () => {
    const { code, out } = await demo('demo-test');
    expect(code, out.slice(-3000)).toBe(0);

    const estate = stepText(out, /\[1\/\d+\] The estate/);
    expect(estate).toContain('prod: a fleet of 2 entries, prod-canary (namespace demo-test-canary) and prod-main');

    const signing = stepText(out, /\[2\/\d+\] Signed releases/);
    expect(signing).toContain('signed checkout, cart, search v1.1.0 in the dev registry');
    expect(signing).toContain('ledger v1.1.0 was pushed by hand');

    // The approver sees the verdict before approving; the unsigned candidate is refused with nothing copied.
    const stable = stepText(out, /\[3\/\d+\] dev → stable/);
    const verdict = stable.search(/ledger\s+✖ Not signed Unsigned\s+signature: none found/);
    expect(verdict, stable).toBeGreaterThan(0);
    expect(verdict).toBeLessThan(stable.indexOf('the developer approves'));
    expect(stable).toMatch(/plan shop-stable-\S+: Incomplete, approved by developer/);
    expect(stable).toMatch(/ledger\s+Failed\s+SignaturePolicy: .*nothing was copied/);
    expect(stable).toContain('ledger refused (SignaturePolicy): nothing copied, stable/shop/ledger holds only v1.0.0');
    for (const app of ['checkout', 'cart', 'search'])
      expect(stable).toMatch(new RegExp(`${app}\\s+Succeeded\\s+v1\\.1\\.0-\\d{8}T\\d{6}Z`));

    // Prod: refused to the developer (approve and continue), approved and continued by the release manager, in waves.
    const prod = stepText(out, /\[4\/\d+\] stable → prod/);
    expect(prod).toMatch(/search\s+✔ Signed\s+Verified/);
    expect(prod).toContain(
      'developer approves: HTTP 403 forbidden: developer may not approve plans into environment prod',
    );
    expect(prod).toContain('developer continues: HTTP 403 forbidden: developer may not continue plans');
    const canary = prod.indexOf('wave canary [prod-canary]: Succeeded');
    const main = prod.indexOf('wave main [prod-main]: Succeeded, continued by release-manager');
    expect(canary, prod).toBeGreaterThan(0);
    expect(main).toBeGreaterThan(canary);
    expect(prod).toMatch(/plan shop-prod-\S+: Complete, approved by release-manager/);
    expect(prod).toMatch(/application\s+dev\s+stable\s+prod/);
    expect(prod).toMatch(/checkout\s+v1\.1\.0 (✓|\w+)\s+v1\.1\.0-\d{8}T\d{6}Z (✓|\w+)\s+v1\.1\.0-\d{8}T\d{6}Z (✓|\w+)/);
    expect(prod).toMatch(/ledger\s+v1\.1\.0 (✓|\w+)\s+v1\.0\.0 (✓|\w+)\s+v1\.0\.0/);

    // A bad release: cart's verification fails in Prometheus, and the whole release rolls back by itself.
    const bad = stepText(out, /\[5\/\d+\] A bad release/);
    expect(bad).toMatch(
      /cart: VerificationFailed: verification failed: check error-rate failed \(last value [\d.]+, must be ≤ 0\.05\)/,
    );
    expect(bad).toMatch(
      /the controller rolls the release back itself: plan shop-stable-\S+-bad-rollback-\S+ \(release; caused by error-rate of cart\)/,
    );
    expect(bad).toMatch(
      /RolledBack, requested and approved by nobody; caused-by: verification of cart \(check error-rate\)/,
    );
    expect(bad).toContain('stable runs cart and search on their previous digests again');

    // The line stop: a plan held with nothing started, the hotfix through with override-freeze, then the held plan.
    const line = stepText(out, /\[6\/\d+\] An incident/);
    expect(line).toContain('release-manager stops the line: LineStop demo-test/inc-7, stopped by release-manager');
    expect(line).toMatch(/shop-stable-\S+-search is approved but waits: Pending, held by demo-test\/inc-7/);
    expect(line).toMatch(
      /shop-stable-\S+-hotfix: Complete through the stopped line \(override by release-manager\); \S+-search still waits/,
    );
    expect(line).toMatch(/shop-stable-\S+-search: Complete/);
    expect(line.indexOf('lifts the line')).toBeLessThan(line.search(/-search: Complete/));

    // The record: kpromo verify prints the chain and exits 0; cosign agrees.
    const record = stepText(out, /\[7\/\d+\] The record/);
    expect(record).toMatch(/signed\s+by cosign\.pub/);
    expect(record).toMatch(/promoted\s+stable -> prod at .* by plan demo-test\/shop-prod-/);
    expect(record).toMatch(/requested by\s+developer/);
    expect(record).toMatch(/approved by\s+release-manager \(release-managers\)/);
    expect(record).toContain('kpromo verify: exit 0');
    expect(record).toContain('agrees: exit 0');

    const look = stepText(out, /\[8\/\d+\] Where to look/);
    expect(look).toMatch(/MCP \(Streamable HTTP\) for agents: http:\/\/127\.0\.0\.1:\d+\/mcp/);
    expect(look).toContain('./kpromo portal');
    expect(look).toContain('release-manager.token');
    expect(out).toContain('where the time went:');
    // Under load (yarn test runs files side by side) the story took 3 minutes here.
  }, 600_000);

  it('--quick promotes the sample release dev -> stable -> prod and nothing else', async () => {
    const { code, out } = await demo('demo-test-quick', '--quick');
    expect(code, out.slice(-3000)).toBe(0);
    expect(out.match(/: Complete \(4 succeeded, 0 failed\)/g)).toHaveLength(2);
    expect(out).toMatch(/developer approves shop-prod-\S+: HTTP 403/);
    expect(out).toMatch(/checkout\s+Succeeded\s+v1\.1\.0-\d{8}T\d{6}Z/);
    // The final versions as a table, not JSON: every app runs v1.1.0 everywhere now (✓ = Healthy).
    expect(out).toMatch(/application\s+dev\s+stable\s+prod/);
    expect(out).toMatch(/checkout\s+v1\.1\.0 (✓|\w+)\s+v1\.1\.0-\d{8}T\d{6}Z (✓|\w+)\s+v1\.1\.0-\d{8}T\d{6}Z (✓|\w+)/);
    expect(out).not.toContain('"versions"');
    expect(out).not.toContain('The estate');
    expect(out).toContain('demo finished in');
  }, 300_000);
});
