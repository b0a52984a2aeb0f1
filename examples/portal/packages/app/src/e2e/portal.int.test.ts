// End to end: the example portal (examples/portal: the Backstage CLI build of the app, the real
// Backstage backend with our plugins, the real controller on the local clusters) in headless Debian
// Chromium. Visits every page (catalog, entity pages, search, settings, every Promotions page); each
// visit fails on a console error or an uncaught exception, on a serious axe-core violation and on a
// missing page title; with KPROMO_SCREENSHOTS=1 (`yarn screenshots`) it writes a screenshot of each to
// docs/screenshots/ (not on every run: a test run leaves the work tree as it found it). On the way it promotes dev ->
// stable (plan form + approve dialog) and stable -> prod (pipeline, one click), follows the plans live,
// rolls back and checks the clusters' workloads. The assistant chats with a real model: llama.cpp's
// llama-server running Gemma 3 270M (test/llm, as plugins/promotions-backend/test/assistant.int).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  assistantLlmConfig,
  freePort,
  kubeConfigFor,
  type LlamaServer,
  needComponents,
  startLlamaServer,
} from '@kpromo/test-harness';
import * as k8s from '@kubernetes/client-node';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ConsoleWatch, SCREENSHOTS, seriousViolations } from './browser';

// Built before this file's hooks run (in the background on a fresh machine): test/cluster/need.ts.
await needComponents('llama');

const repo = join(import.meta.dirname, '../../../../../..');
const NS = 'kpromo-portal-e2e';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const APP_TITLE = 'kpromo portal';

let portal: ChildProcess | undefined;
let llama: LlamaServer | undefined;
let browser: Browser | undefined;
let page: Page;
let consoleWatch: ConsoleWatch;
let base = '';
const output: string[] = [];
const visited: string[] = [];

async function startPortal(): Promise<string> {
  llama = await startLlamaServer();
  // The backend's model endpoint (promotions.assistant.llm), given to the portal as an extra app-config.
  const assistantConfig = join(mkdtempSync(join(tmpdir(), 'kpromo-portal-llm-')), 'app-config.assistant.yaml');
  writeFileSync(assistantConfig, JSON.stringify({ promotions: { assistant: { llm: assistantLlmConfig(llama) } } }));
  const port = await freePort();
  const controllerPort = await freePort();
  const mcpPort = await freePort();
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
      '--mcp-port',
      String(mcpPort),
      '--registry-port',
      '17631',
      '--namespace',
      NS,
      '--extra-config',
      assistantConfig,
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

const shot = async (name: string) => {
  if (process.env.KPROMO_SCREENSHOTS === '1')
    await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
};

/**
 * What every page must pass once it shows what `ready` waits for: no console errors since the last
 * check (besides `expectedErrors`), no serious axe violations, a title of its own; then a screenshot.
 */
async function checkPage(name: string, opts: { title?: RegExp; expectedErrors?: RegExp } = {}) {
  const path = new URL(page.url()).pathname;
  visited.push(path);
  // give late requests (permissions, polling) the chance to fail visibly before judging the console;
  // judge the page at rest, not a row the pointer happens to hover after the last click
  await page.mouse.move(0, 0);
  await page.waitForTimeout(500);
  // Backstage's own cards show an unlabelled MUI spinner while they load (axe: aria-progressbar-name):
  // judge the page once they have loaded, as a reader would see it; a spinner that never goes is judged.
  await page
    .locator('.MuiCircularProgress-root')
    .first()
    .waitFor({ state: 'detached', timeout: 15_000 })
    .catch(() => undefined);
  expect(consoleWatch.take(opts.expectedErrors), `console errors on ${path}`).toEqual([]);
  const violations = await seriousViolations(page, path);
  expect(
    violations.map((v) => `${v.impact} ${v.id} (${v.help}): ${v.targets.join(' | ')}`),
    `serious axe violations on ${path}`,
  ).toEqual([]);
  const title = await page.title();
  expect(title, `title of ${path}`).not.toBe(APP_TITLE);
  expect(title).toContain(`| ${APP_TITLE}`);
  if (opts.title) expect(title).toMatch(opts.title);
  await shot(name);
}

async function visit(path: string) {
  await page.goto(`${base}${path}`);
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: apt-get install -y chromium`);
  mkdirSync(SCREENSHOTS, { recursive: true });
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
  consoleWatch = new ConsoleWatch(page);
  // Guest sign-in (auth.providers.guest): a real Backstage user token for every API call.
  await visit('/promotions');
  await page.getByRole('button', { name: 'Enter' }).click();
}, 400_000);

afterAll(async () => {
  await browser?.close();
  if (portal && portal.exitCode === null) {
    const exited = new Promise((r) => portal!.once('exit', r));
    portal.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
  }
  await llama?.stop();
}, 60_000);

describe('example portal in Chromium', () => {
  it('assistant chat: "what version of checkout runs in prod?" shows the tool call card and the real version', async () => {
    // First, while prod runs the sample release's v1.0.0 (as in the backend's assistant test).
    const prodTag = await deploymentTag('prod', 'checkout');
    const version = /^v\d+\.\d+\.\d+/.exec(prodTag)?.[0];
    expect(version, prodTag).toBeDefined();
    await visit('/promotions/assistant');
    await expect.poll(() => page.getByText(/Assistant · \d+ tools/).count(), { timeout: 30_000 }).toBe(1);
    // A model is configured, so the panel opens in chat mode.
    expect(await page.getByRole('switch', { name: /^Chat/ }).isChecked()).toBe(true);
    await page.getByRole('textbox', { name: 'Ask' }).fill('what version of checkout runs in prod?');
    await page.getByRole('button', { name: 'Send' }).click();
    // The answer streams in (a few characters at a time): poll until it is complete enough.
    const answer = page.getByTestId('assistant-answer');
    await expect.poll(async () => (await answer.last().textContent()) ?? '', { timeout: 120_000 }).toContain(version);
    const card = page.getByTestId('tool-call').first();
    expect(await card.textContent()).toMatch(/^tool (list|state)/);
    expect(await card.getByTestId('tool-call-result').textContent()).toContain(version);
    await checkPage('assistant-chat', { title: /^Assistant/ });
    await visit('/promotions'); // where the next test starts
  }, 180_000);

  it('shows the versions running on the real clusters, with drift and readable digests', async () => {
    const cell = (app: string, env: string) => page.getByTestId(`cell-${app}-${env}`);
    await expect.poll(() => cell('checkout', 'dev').textContent(), { timeout: 60_000 }).toContain('v1.1.0');
    expect(await cell('checkout', 'stable').textContent()).toContain('v1.0.0');
    expect(await cell('checkout', 'prod').textContent()).toContain('v1.0.0');
    expect(await cell('ledger', 'dev').textContent()).toContain('Healthy');
    expect(await cell('checkout', 'stable').getByTestId('drift').count()).toBe(1);
    expect(await cell('checkout', 'prod').getByTestId('drift').count()).toBe(0);
    // the digest is on the page (short, with a copy button), not only in a tooltip
    expect(await cell('checkout', 'dev').getByTestId('digest').textContent()).toMatch(/^sha256:[0-9a-f]{12}$/);
    expect(
      await cell('checkout', 'dev')
        .getByRole('button', { name: /^Copy digest sha256:/ })
        .count(),
    ).toBe(1);
    // application names lead to their catalog entities
    expect(await page.getByRole('link', { name: 'checkout', exact: true }).getAttribute('href')).toBe(
      '/catalog/default/component/checkout',
    );
    await checkPage('releases', { title: /^Releases/ });
  });

  it('shows the pipeline: stages left to right, what may move next', async () => {
    await page.getByRole('tab', { name: 'Pipeline' }).click();
    const next = page.getByTestId('transition-dev-stable');
    await expect.poll(() => next.getByTestId('eligible-count').textContent()).toBe('4 of 4 ready to promote');
    expect(await page.getByTestId('transition-stable-prod').getByTestId('eligible-count').textContent()).toContain(
      'Nothing to promote',
    );
    expect(await page.getByTestId('stage-dev-checkout').textContent()).toContain('ready for stable');
    expect(await page.getByTestId('stage-stable-checkout').textContent()).toContain('v1.0.0');
    // the stages and their approval rules come from the PromotionFlow (GET /flows)
    expect(await page.getByTestId('stage-rules-prod').textContent()).toBe('manual · 1 approval');
    await checkPage('pipeline', { title: /^Pipeline/ });
  });

  let planPath = '';
  it('creates a plan dev -> stable, approves it in the dialog and watches it complete', async () => {
    await page.getByRole('tab', { name: 'Plans' }).click();
    // the form starts on a stage with candidates and checks them by itself
    const preview = page.getByTestId('diff-preview');
    await expect.poll(() => preview.textContent()).toContain('4 candidates dev → stable (flow shop)');
    expect(await preview.textContent()).toContain('checkout: v1.0.0 → v1.1.0');
    // the real diff: both versions' digests short and copyable, where the image is, its source labels
    const candidate = preview.getByTestId('candidate-checkout');
    expect(await candidate.getByTestId('digest').allTextContents()).toEqual([
      expect.stringMatching(/^sha256:[0-9a-f]{12}$/),
      expect.stringMatching(/^sha256:[0-9a-f]{12}$/),
    ]);
    expect(await candidate.textContent()).toMatch(/[\w.-]+:\d+\/shop\/checkout/); // the dev registry and repository
    // the sample images carry no OCI source labels: the diff says so rather than linking anything
    await expect.poll(() => candidate.textContent()).toContain('no source labels on the image');
    await checkPage('new-plan', { title: /^Plans/ });
    await page.getByRole('button', { name: 'Create plan' }).click();
    await page.waitForURL(/\/promotions\/plans\/kpromo-portal-e2e\//);
    planPath = new URL(page.url()).pathname;

    await page.getByRole('button', { name: 'Approve & promote' }).click();
    const dialog = page.getByRole('dialog');
    await expect
      .poll(() => dialog.getByTestId('change-list').textContent())
      .toContain('checkout: v1.0.0 → v1.1.0 in stable');
    expect(await dialog.getByRole('listitem').count()).toBe(4);
    await checkPage('approve-dialog');
    await dialog.getByRole('button', { name: 'Promote to stable' }).click();

    // live progress without a reload, announced to screen readers; it goes through Promoting to Complete
    const phase = page.getByTestId('plan-phase');
    await expect.poll(() => phase.textContent(), { timeout: 150_000, interval: 500 }).toBe('Complete');
    for (const app of ['checkout', 'cart', 'search', 'ledger'])
      expect(await page.getByTestId(`phase-${app}`).textContent()).toBe('Succeeded');
    expect(new URL(page.url()).pathname).toBe(planPath);
    expect(await page.getByTestId('plan-announcer').textContent()).toContain('Complete. 4 of 4 applications done');
    const timeline = page.getByTestId('timeline');
    const kinds = await timeline.locator('li').evaluateAll((lis) => lis.map((li) => li.getAttribute('data-kind')));
    expect(kinds[0]).toBe('created');
    expect(kinds).toContain('approved');
    expect(kinds).toContain('started');
    expect(kinds.filter((k) => k === 'app-finished')).toHaveLength(4);
    expect(kinds.at(-1)).toBe('finished');
    expect(await timeline.textContent()).toContain('Approved by user:development/guest');
    await checkPage('plan-complete', { title: /^shop-stable-.* · Plans/ });
    // the real workloads in the stable cluster run the promoted release (unique target tag v1.1.0-<stamp>)
    expect(await deploymentTag('stable', 'checkout')).toMatch(/^v1\.1\.0/);
    expect(await deploymentTag('prod', 'checkout')).toBe('v1.0.0');
  }, 240_000);

  it('promotes stable -> prod with one click from the pipeline, through the confirmation dialog', async () => {
    await visit('/promotions/pipeline');
    const next = page.getByTestId('transition-stable-prod');
    await expect.poll(() => next.getByTestId('eligible-count').textContent()).toBe('4 of 4 ready to promote');
    await next.getByRole('button', { name: 'Promote 4 to prod' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.getByTestId('candidate-checkout').textContent()).toMatch(/checkout: v1\.0\.0 → v1\.1\.0-\S+/);
    await checkPage('promote-dialog');
    await dialog.getByRole('button', { name: 'Promote to prod' }).click();
    await page.waitForURL(/\/promotions\/plans\/kpromo-portal-e2e\/shop-prod-/);
    // created approved by the one who clicked: it runs at once
    await expect
      .poll(() => page.getByTestId('plan-phase').textContent(), { timeout: 150_000, interval: 500 })
      .toBe('Complete');
    expect(await deploymentTag('prod', 'checkout')).toMatch(/^v1\.1\.0/);
    await visit('/promotions/pipeline');
    await expect
      .poll(() => page.getByTestId('transition-stable-prod').getByTestId('eligible-count').textContent())
      .toContain('Nothing to promote');
  }, 240_000);

  let rollbackPath = '';
  it('rolls the stable plan back: before and after the right way round, a colour of its own', async () => {
    await visit(planPath);
    await page.getByRole('button', { name: 'Roll back' }).click();
    const dialog = page.getByRole('dialog');
    await expect
      .poll(() => dialog.getByTestId('rollback-list').textContent())
      .toMatch(/checkout: v1\.1\.0-\S+ → v1\.0\.0/);
    await dialog.getByRole('button', { name: 'Roll back' }).click();
    // The rollback's name is generated (<plan>-rollback-<random>): a squatted <plan>-rollback blocks nothing.
    await page.waitForURL(/-rollback-[a-z0-9]{5}$/);
    rollbackPath = new URL(page.url()).pathname;
    const phase = page.getByTestId('plan-phase');
    await expect.poll(() => phase.textContent(), { timeout: 150_000, interval: 500 }).toBe('RolledBack');
    // only stable changes; a finished rollback is not painted like the plan it undid
    expect(await page.getByTestId('plan-subtitle').textContent()).toMatch(/^Rollback of shop-stable-\S+ in stable · /);
    expect(await phase.locator('[data-tone]').getAttribute('data-tone')).toBe('restored');
    const row = page.getByRole('row').filter({ hasText: 'checkout' });
    const cells = await row.getByRole('gridcell').allTextContents();
    expect(cells[0]).toMatch(/^v1\.1\.0-/); // stable before the rollback
    expect(cells[1]).toMatch(/^v1\.0\.0/); // what it restores
    await checkPage('rollback', { title: /-rollback-[a-z0-9]{5} · Plans/ });
    expect(await deploymentTag('stable', 'checkout')).toBe('v1.0.0');
  }, 240_000);

  it('shows the undone plan as rolled back, linking to its rollback instead of offering another', async () => {
    await page
      .getByRole('link', { name: /^shop-stable-\S+$/ })
      .first()
      .click();
    await page.waitForURL((u) => u.pathname === planPath);
    // the plan view starts over for the new URL: the plan's own data, not the rollback's
    expect(await page.getByTestId('plan-subtitle').textContent()).toMatch(/^Promote dev → stable/);
    await expect.poll(() => page.getByTestId('plan-phase').textContent(), { timeout: 30_000 }).toBe('RolledBack');
    expect(await page.getByTestId('plan-phase').locator('[data-tone]').getAttribute('data-tone')).toBe('warning');
    expect(await page.getByRole('button', { name: 'Roll back' }).count()).toBe(0);
    const link = page.getByTestId('existing-rollback').getByRole('link');
    expect(await link.getAttribute('href')).toBe(rollbackPath);
    expect(await page.getByTestId('timeline').textContent()).toContain('Rolled back by');
    await checkPage('plan-rolled-back');
  });

  it('lists the plans with server-side filters, paging and relative times', async () => {
    await visit('/promotions/plans');
    const table = page.getByRole('grid', { name: 'Promotion plans' });
    await expect.poll(() => table.getByRole('row').count()).toBe(4); // header + 3 plans
    expect(await page.getByTestId('plans-paging').textContent()).toContain('1–3 of 3 plans');
    // relative times; the absolute time shows on keyboard focus
    const time = table.getByTestId('relative-time').first();
    expect(await time.textContent()).toMatch(/just now|min ago/);
    await expect
      .poll(async () => {
        await time.focus();
        return time
          .getByTestId('absolute-time')
          .textContent({ timeout: 1000 })
          .catch(() => '');
      })
      .toMatch(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC/);
    await visit('/promotions/plans?action=rollback');
    await expect.poll(() => table.getByRole('row').count()).toBe(2);
    expect(await table.textContent()).toContain('-rollback');
    await visit('/promotions/plans?environment=prod');
    await expect.poll(() => table.getByRole('row').count(), { timeout: 30_000 }).toBe(2);
    expect(await table.textContent()).toContain('shop-prod-');
    await visit('/promotions/plans');
    await page.getByRole('searchbox', { name: 'Application' }).fill('no-such-app');
    await page.getByTestId('no-plan-matches').waitFor();
    await page.getByRole('searchbox', { name: 'Application' }).fill('check*');
    await expect.poll(() => table.getByRole('row').count()).toBe(4);
    await checkPage('plans', { title: /^Plans/ });
  });

  it('stops the line from the Plans page with a reason, shows who stopped it and why, and lifts it', async () => {
    await visit('/promotions/plans');
    await page.getByRole('button', { name: 'Stop the line' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('textbox', { name: /Reason/ }).fill('INC-42: checkout 5xx above 2%');
    await dialog.getByRole('button', { name: 'Stop the line' }).click();
    const stops = page.getByTestId('line-stops');
    await expect.poll(() => stops.textContent(), { timeout: 30_000 }).toContain('INC-42: checkout 5xx above 2%');
    // The stopper is the signed-in user as the controller authenticated the call.
    expect(await stops.textContent()).toContain('user:development/guest');
    await checkPage('line-stopped', { title: /^Plans/ });
    await stops.getByRole('button', { name: /^Lift / }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Lift the stop' }).click();
    await expect.poll(() => stops.textContent(), { timeout: 30_000 }).not.toContain('INC-42');
  });

  it('shows the DORA keys as charts and the release history, rollback included', async () => {
    await visit('/promotions/insights');
    const timeline = page.getByRole('list', { name: 'Release history of everything' });
    await expect
      .poll(() => timeline.textContent(), { timeout: 60_000, interval: 1000 })
      .toContain('rollback to v1.0.0');
    expect(await timeline.textContent()).toContain('checkout');
    // stable: one promotion that was rolled back, so the change failure rate there is 100%
    const cfr = page.getByRole('img', { name: /^Change failure rate:/ });
    expect(await cfr.getAttribute('aria-label')).toMatch(/→ stable: 100%/);
    expect(await page.getByTestId('dora-deploymentFrequency').textContent()).toMatch(/\/day/);
    await checkPage('insights', { title: /^Insights/ });
  });

  it('onboarding: finds a workload no Application promotes, and shows the Application proposed for it', async () => {
    // A service deployed to dev by hand, next to the sample release (same registry, its own repository).
    const apps = kubeConfigFor('dev', inject('kubeconfig')).makeApiClient(k8s.AppsV1Api);
    const checkout = await apps.readNamespacedDeployment({ name: 'checkout', namespace: NS });
    const image = (checkout.spec?.template.spec?.containers[0].image ?? '').replace(/checkout(?=[:@])/, 'newsvc');
    await apps.createNamespacedDeployment({
      namespace: NS,
      body: {
        metadata: { name: 'newsvc', namespace: NS },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'newsvc' } },
          template: {
            metadata: { labels: { app: 'newsvc' } },
            spec: { tolerations: [{ operator: 'Exists' }], containers: [{ name: 'main', image }] },
          },
        },
      },
    });
    await visit('/promotions/adopt');
    await page.getByRole('button', { name: 'Find workloads' }).click();
    const candidates = page.getByTestId('adopt-candidates');
    await candidates.waitFor({ timeout: 30_000 });
    expect(await page.getByRole('checkbox', { name: /^newsvc / }).count()).toBe(1);
    await page.getByRole('button', { name: /^Review 1 application/ }).click();
    const yaml = page.getByLabel('Proposed resources');
    await yaml.waitFor({ timeout: 30_000 });
    expect(await yaml.textContent()).toContain('name: newsvc');
    // Proposed, never applied: no Application newsvc exists.
    const crs = kubeConfigFor('dev', inject('kubeconfig')).makeApiClient(k8s.CustomObjectsApi);
    await expect(
      crs.getNamespacedCustomObject({
        group: 'promotions.kpromo.dev',
        version: 'v1alpha1',
        namespace: NS,
        plural: 'applications',
        name: 'newsvc',
      }),
    ).rejects.toMatchObject({ code: 404 });
    await checkPage('onboarding', { title: /^Onboarding/ });
  });

  it('says a made-up plan does not exist, and offers the way back', async () => {
    await visit('/promotions/plans/kpromo-portal-e2e/no-such-plan');
    await page.getByRole('heading', { name: 'Plan no-such-plan not found' }).waitFor();
    expect(await page.getByRole('link', { name: 'Back to all plans' }).count()).toBe(1);
    // the 404 of that plan's URL is what the page is about
    await checkPage('plan-not-found', { expectedErrors: /status of 404.*no-such-plan|no-such-plan.*404/ });
  });

  it('shows the catalog with readable names, owners that resolve, and the Promotions tabs', async () => {
    await visit('/catalog');
    await expect
      .poll(() => page.getByRole('link', { name: 'checkout', exact: true }).count(), { timeout: 90_000 })
      .toBe(1);
    await checkPage('catalog', { title: /^Catalog/ });

    await visit('/catalog/default/component/checkout');
    await expect.poll(() => page.getByText('Shop team').first().isVisible(), { timeout: 30_000 }).toBe(true);
    // the owner group exists: no "entity not found" warning for the owner
    await page.getByText('Relations').first().waitFor();
    expect(await page.getByText(/not found|could not be found/i).count()).toBe(0);
    await checkPage('entity', { title: /^checkout/ });

    await visit('/catalog/default/component/checkout/promotions');
    const versions = page.getByTestId('entity-versions');
    await expect.poll(() => versions.textContent(), { timeout: 90_000, interval: 1000 }).toContain('v1.1.0');
    expect(await page.getByRole('grid', { name: 'Last promotions' }).textContent()).toContain('rollback');
    await expect
      .poll(() => page.getByRole('list', { name: 'Release history of checkout' }).textContent(), { timeout: 30_000 })
      .toContain('rollback to v1.0.0');
    await checkPage('entity-tab', { title: /^checkout/ });

    await visit('/catalog/default/resource/stable/promotions');
    await expect
      .poll(() => page.getByTestId('env-version-checkout').textContent(), { timeout: 60_000 })
      .toContain('v1.0.0');
    await checkPage('environment-tab', { title: /^stable/ });

    await visit('/catalog/default/group/team-shop');
    await expect
      .poll(() => page.getByText('Guest (release manager)').first().isVisible(), { timeout: 30_000 })
      .toBe(true);
    await checkPage('group', { title: /^Shop team/ });

    await visit('/catalog/development/user/guest');
    await expect.poll(() => page.getByText('Shop team').first().isVisible(), { timeout: 30_000 }).toBe(true);
    await checkPage('user', { title: /^Guest/ });

    await visit('/catalog-graph');
    await expect.poll(() => page.locator('svg').count(), { timeout: 30_000 }).toBeGreaterThan(0);
    await checkPage('catalog-graph', { title: /^Catalog graph/ });
  }, 300_000);

  it('finds kpromo applications, environments and plans in search', async () => {
    // the collators index on a schedule (kpromo every 20 s, catalog every 30 s)
    await expect
      .poll(
        async () => {
          await visit('/search?query=checkout');
          await page.waitForTimeout(2000);
          return page.getByTestId('kpromo-search-result').count();
        },
        { timeout: 120_000, interval: 5000 },
      )
      .toBeGreaterThan(0);
    expect(await page.getByTestId('kpromo-search-result').first().textContent()).toContain('checkout');
    // one hit per object: the catalog's own documents of kpromo applications, environments and plans
    // are left to the kpromo collator (both collators have run several times by now)
    const linksTo = async () =>
      page.locator('a[href]').evaluateAll((as) => as.map((a) => new URL((a as HTMLAnchorElement).href).pathname));
    const hits = (paths: string[], path: string) => paths.filter((p) => p === path).length;
    const paths = await linksTo();
    expect(hits(paths, '/catalog/default/component/checkout'), paths.join(', ')).toBe(1);
    // Results render as each collator's answer arrives: wait for the one asserted, not for any.
    await visit('/search?query=stable');
    await expect
      .poll(async () => hits(await linksTo(), '/catalog/default/resource/stable'), { timeout: 30_000 })
      .toBe(1);
    // the catalog collator still indexes everything else (here: an org group)
    await visit('/search?query=team-shop');
    await expect
      .poll(async () => hits(await linksTo(), '/catalog/default/group/team-shop'), { timeout: 30_000 })
      .toBe(1);
    await checkPage('search', { title: /^Search/ });
  }, 180_000);

  it('shows the user settings', async () => {
    await visit('/settings');
    await expect.poll(() => page.getByText('Guest (release manager)').first().isVisible()).toBe(true);
    await checkPage('settings', { title: /^Settings/ });
  });

  it('lists the MCP tools in the assistant and runs one through the backend proxy', async () => {
    await visit('/promotions/assistant');
    await expect.poll(() => page.getByText(/Assistant · \d+ tools/).count(), { timeout: 30_000 }).toBe(1);
    // Tools mode (the switch's indicator covers its input, hence force).
    await page.getByRole('switch', { name: /^Chat/ }).uncheck({ force: true });
    const form = page.getByTestId('tool-form-list');
    await form.getByRole('button', { name: /kind/ }).click();
    await page.getByRole('option', { name: 'applications' }).click();
    await form.getByRole('button', { name: 'Run list' }).click();
    const result = page.getByTestId('tool-result');
    await expect.poll(() => result.textContent(), { timeout: 30_000 }).toContain('checkout');
    await checkPage('assistant', { title: /^Assistant/ });
  }, 90_000);

  it('visited every page', () => {
    const seen = (prefix: string) => visited.some((p) => p === prefix || p.startsWith(`${prefix}/`));
    for (const p of [
      '/promotions',
      '/promotions/pipeline',
      '/promotions/plans',
      '/promotions/insights',
      '/promotions/assistant',
      '/catalog',
      '/catalog/default/component',
      '/catalog/default/resource',
      '/catalog/default/group',
      '/catalog/development/user',
      '/catalog-graph',
      '/search',
      '/settings',
    ])
      expect(seen(p), `${p} in ${visited.join(', ')}`).toBe(true);
    expect(visited.some((p) => /^\/promotions\/plans\/[^/]+\/[^/]+$/.test(p))).toBe(true);
  });
});
