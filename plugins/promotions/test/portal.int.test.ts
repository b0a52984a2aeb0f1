// End to end: the example portal (examples/portal, real Backstage backend + our plugins + the real
// controller on the local clusters) driven in headless Debian Chromium. Creates and approves a plan
// dev -> stable in the browser, watches it complete, rolls it back; checks the clusters' workloads;
// saves screenshots to docs/screenshots/.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, kubeConfigFor } from '@kpromo/test-harness';
import * as k8s from '@kubernetes/client-node';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const repo = join(import.meta.dirname, '../../..');
const shots = join(repo, 'docs/screenshots');
const NS = 'kpromo-portal-e2e';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

let portal: ChildProcess | undefined;
let browser: Browser | undefined;
let page: Page;
let base = '';
const output: string[] = [];

async function startPortal(): Promise<string> {
  const port = await freePort();
  const controllerPort = await freePort();
  portal = spawn(
    process.execPath,
    [
      join(repo, 'node_modules/tsx/dist/cli.mjs'),
      join(repo, 'examples/portal/scripts/start.ts'),
      '--build',
      '--port',
      String(port),
      '--controller-port',
      String(controllerPort),
      '--registry-port',
      '17631',
      '--namespace',
      NS,
    ],
    { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'warn' } },
  );
  return new Promise((resolve, reject) => {
    const onData = (b: Buffer) => {
      const s = b.toString();
      output.push(s);
      const m = /portal ready at (http:\/\/localhost:\d+)/.exec(s);
      if (m) resolve(m[1]);
    };
    portal!.stdout!.on('data', onData);
    portal!.stderr!.on('data', (b: Buffer) => output.push(b.toString()));
    portal!.once('exit', (code) => reject(new Error(`portal exited (${code}):\n${output.join('').slice(-3000)}`)));
  });
}

async function deploymentTag(cluster: string, app: string): Promise<string> {
  const apps = kubeConfigFor(cluster, inject('kubeconfig')).makeApiClient(k8s.AppsV1Api);
  const d = await apps.readNamespacedDeployment({ name: app, namespace: NS });
  const image = d.spec?.template.spec?.containers[0].image ?? '';
  return /:([^:@/]+)(@|$)/.exec(image)?.[1] ?? image;
}

const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: apt-get install -y chromium`);
  mkdirSync(shots, { recursive: true });
  base = await startPortal();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(30_000);
  // Guest sign-in (auth.providers.guest): a real Backstage user token for every API call.
  await page.goto(`${base}/promotions`);
  await page.getByRole('button', { name: 'Enter' }).click();
}, 400_000);

afterAll(async () => {
  await browser?.close();
  if (portal && portal.exitCode === null) {
    const exited = new Promise((r) => portal!.once('exit', r));
    portal.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
  }
}, 60_000);

describe('example portal in Chromium', () => {
  it('shows the versions running on the real clusters, with drift', async () => {
    const cell = (app: string, env: string) => page.getByTestId(`cell-${app}-${env}`);
    await expect.poll(() => cell('checkout', 'dev').textContent(), { timeout: 60_000 }).toContain('v1.1.0');
    expect(await cell('checkout', 'stable').textContent()).toContain('v1.0.0');
    expect(await cell('checkout', 'prod').textContent()).toContain('v1.0.0');
    expect(await cell('ledger', 'dev').textContent()).toContain('Healthy');
    expect(await cell('checkout', 'stable').getByTestId('drift').count()).toBe(1);
    expect(await cell('checkout', 'prod').getByTestId('drift').count()).toBe(0);
    await shot('releases');
  });

  let planUrl = '';
  it('creates a plan dev -> stable, approves it in the dialog and watches it complete', async () => {
    await page.getByRole('tab', { name: 'Plans' }).click();
    await page.getByRole('button', { name: 'Preview candidates' }).click();
    const preview = page.getByTestId('diff-preview');
    await expect.poll(() => preview.textContent()).toContain('4 candidates dev → stable (flow shop)');
    expect(await preview.textContent()).toContain('checkout: v1.0.0 → v1.1.0');
    await shot('new-plan');
    await page.getByRole('button', { name: 'Create plan' }).click();
    await page.waitForURL(/\/promotions\/plans\/kpromo-portal-e2e\//);
    planUrl = page.url();

    await page.getByRole('button', { name: 'Approve & promote' }).click();
    const dialog = page.getByRole('dialog');
    await expect
      .poll(() => dialog.getByTestId('change-list').textContent())
      .toContain('checkout: v1.0.0 → v1.1.0 in stable');
    expect(await dialog.getByRole('listitem').count()).toBe(4);
    await shot('approve-dialog');
    await dialog.getByRole('button', { name: 'Promote to stable' }).click();

    // live progress without a reload: the phase goes through Promoting to Complete
    const phase = page.getByTestId('plan-phase');
    await expect.poll(() => phase.textContent(), { timeout: 150_000, interval: 500 }).toBe('Complete');
    for (const app of ['checkout', 'cart', 'search', 'ledger'])
      expect(await page.getByTestId(`phase-${app}`).textContent()).toBe('Succeeded');
    expect(page.url()).toBe(planUrl);
    await shot('plan-complete');
    // the real workloads in the stable cluster run the promoted release (unique target tag v1.1.0-<stamp>)
    expect(await deploymentTag('stable', 'checkout')).toMatch(/^v1\.1\.0/);
    expect(await deploymentTag('prod', 'checkout')).toBe('v1.0.0');
  }, 240_000);

  it('rolls the plan back from the plan view', async () => {
    await page.getByRole('button', { name: 'Roll back' }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.getByTestId('rollback-list').textContent()).toContain('checkout:');
    await dialog.getByRole('button', { name: 'Roll back' }).click();
    await page.waitForURL(/-rollback$/);
    const phase = page.getByTestId('plan-phase');
    await expect.poll(() => phase.textContent(), { timeout: 150_000, interval: 500 }).toBe('RolledBack');
    await shot('rollback');
    expect(await deploymentTag('stable', 'checkout')).toBe('v1.0.0');

    await page.getByRole('tab', { name: 'Releases' }).click();
    await expect
      .poll(() => page.getByTestId('cell-checkout-stable').textContent(), { timeout: 30_000 })
      .toContain('v1.0.0');
  }, 240_000);

  it('shows the Promotions tab on the catalog entity of an application', async () => {
    await page.goto(`${base}/catalog/default/component/dev.${NS}.checkout/promotions`);
    const versions = page.getByTestId('entity-versions');
    await expect.poll(() => versions.textContent(), { timeout: 90_000, interval: 1000 }).toContain('v1.1.0');
    expect(await page.getByRole('grid', { name: 'Last promotions' }).textContent()).toContain('rollback');
    await shot('entity-tab');
  }, 120_000);

  it('lists the MCP tools in the assistant and runs one through the backend proxy', async () => {
    await page.goto(`${base}/promotions/assistant`);
    await expect.poll(() => page.getByText(/Assistant · \d+ tools/).count(), { timeout: 30_000 }).toBe(1);
    const form = page.getByTestId('tool-form-list');
    await form.getByRole('button', { name: /kind/ }).click();
    await page.getByRole('option', { name: 'applications' }).click();
    await form.getByRole('button', { name: 'Run list' }).click();
    const result = page.getByTestId('tool-result');
    await expect.poll(() => result.textContent(), { timeout: 30_000 }).toContain('checkout');
    await shot('assistant');
  }, 90_000);
});
