// The plan card (MCP Apps) in a browser: headless Chromium runs a host built on ext-apps' AppBridge
// (mcpCardHost.ts) whose MCP client is the real SDK client, connected as a person (devon) to the real
// controller's MCP server on the local clusters. The host finds the card through the tool's
// _meta.ui.resourceUri, reads it from the server, and hands it the tool result; the person clicks in
// the card. Every test fails on a console error or an uncaught exception in the page or the card.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { PromotionPlan } from '@kpromo/api';
import { callApi, getPlan, insiderWorld } from '@kpromo/test-harness/controller';
import { modernClient } from '@kpromo/test-harness/mcpClient';
import { getToolUiResourceUri } from '@modelcontextprotocol/ext-apps/app-bridge';
import { RESOURCE_MIME_TYPE } from '@modelcontextprotocol/ext-apps/server';
import { build } from 'esbuild';
import { type Browser, chromium, type FrameLocator, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { PLAN_CARD_URI } from '../src/mcp/card.js';
import type { Running } from '../src/runtime.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const world = insiderWorld('card', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: ['alpha', 'beta', 'gamma', 'delta'],
  // An order in the release: delta after gamma (a plan of both shows their steps).
  applications: { dependsOn: (app) => (app === 'delta' ? ['gamma'] : undefined) },
});
const { ns: NS, dev, base } = world;
/** A developer (INSIDER_ROLES): creates plans and approves into stable. */
const devon = world.insider('devon', 'developer');

type Client = Awaited<ReturnType<typeof modernClient>>;
type ToolResult = Awaited<ReturnType<Client['callTool']>>;

let ctl: Running;
let client: Client;
let browser: Browser;
let page: Page;
let hostServer: Server;
let hostUrl = '';
const errors: string[] = [];
/** Every request the page or the card made but the host page itself. */
const fetched: string[] = [];
const chat: unknown[] = [];
const started = Date.now();

/** The host page: its script is ext-apps' AppBridge, bundled here for the browser. */
async function serveHost(): Promise<string> {
  const js = await build({
    entryPoints: [join(import.meta.dirname, 'mcpCardHost.ts')],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
  });
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>host</title></head><body><script>${js.outputFiles[0].text}</script></body></html>`;
  hostServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html);
  });
  await new Promise<void>((resolve) => hostServer.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(hostServer.address() as AddressInfo).port}/`;
}

/** The card's HTML, as a host gets it: the tool's _meta.ui.resourceUri, read from the server. */
async function cardOf(tool: string): Promise<string> {
  const tools = await client.listTools();
  const t = tools.tools.find((x) => x.name === tool);
  const uri = t && getToolUiResourceUri(t);
  expect(uri).toBe(PLAN_CARD_URI);
  const r = await client.readResource({ uri: uri! });
  const [content] = r.contents;
  expect(content.mimeType).toBe(RESOURCE_MIME_TYPE);
  return (content as { text: string }).text;
}

/**
 * Calls `tool` as the person and opens its card in the host with the result (`alter`ed, for what
 * this world cannot make); the card's frame.
 */
async function openCard(
  tool: string,
  input: Record<string, unknown>,
  alter: (r: ToolResult) => ToolResult = (r) => r,
): Promise<{ card: FrameLocator; result: ToolResult }> {
  const html = await cardOf(tool);
  const result = alter(await client.callTool({ name: tool, arguments: input }));
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  await page.evaluate((c) => (window as unknown as { openCard(x: unknown): Promise<void> }).openCard(c), {
    html,
    input,
    result,
  });
  return { card: page.frameLocator('iframe#card'), result };
}

/** Each test promotes its own applications: one approved leaves no candidate of it behind. */
async function createPlan(name: string, ...applications: string[]): Promise<void> {
  const r = await callApi(ctl.port, '/api/v1/plans', {
    method: 'POST',
    body: { namespace: NS, from: 'dev', to: 'stable', name, applications },
    token: devon.token,
  });
  expect(r.status, await r.text()).toBe(201);
}

beforeAll(async () => {
  await world.setUp();
  ctl = await world.start({ mcp: { enabled: true, host: '127.0.0.1', port: 0, write: true } });
  client = await modernClient(ctl.mcp!.url, devon.token);
  hostUrl = await serveHost();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  page = await browser.newPage();
  // Console messages and errors of every frame of the page, the card's included.
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => errors.push(`uncaught ${e.name}: ${e.message}`));
  page.on('request', (r) => {
    if (r.url() !== hostUrl) fetched.push(r.url());
  });
  await page.exposeFunction('mcpCallTool', (params: { name: string; arguments?: Record<string, unknown> }) =>
    client.callTool(params),
  );
  await page.exposeFunction('chatMessage', (params: unknown) => void chat.push(params));
  await page.goto(hostUrl);
}, 240_000);

afterEach(() => {
  expect(errors.splice(0)).toEqual([]);
  expect(fetched.splice(0)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await client?.close();
  hostServer?.close();
  await world.stop();
  console.log(`mcpCard.int.test.ts: ${((Date.now() - started) / 1000).toFixed(1)} s`);
});

describe('the plan card in an MCP Apps host', () => {
  it('shows the plan the plan tool created (candidate version, digest, approvals still needed, uid); Approve records the person with the uid the card showed', async () => {
    const { card, result } = await openCard('plan', {
      namespace: NS,
      from: 'dev',
      to: 'stable',
      name: 'card-ok',
      applications: ['alpha'],
    });
    const shown = (
      result.structuredContent as { plan: { uid: string; candidates: Array<{ tag: string; digest: string }> } }
    ).plan;
    const uid = (await getPlan(dev, NS, 'card-ok')).metadata.uid!;
    expect(shown.uid).toBe(uid);
    // A host without MCP Apps reads the same in the text.
    const text = (result.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('\n');
    expect(text).toContain(`to approve: promote with plan card-ok and uid ${uid}`);
    await expect.poll(() => card.locator('#uid').textContent()).toBe(uid);
    const row = card.getByRole('row', { name: /alpha/ });
    expect(await row.textContent()).toContain(shown.candidates[0].tag);
    expect(await row.locator('td').nth(1).getAttribute('title')).toBe(shown.candidates[0].digest);
    expect(await card.locator('.waiting').textContent()).toMatch(/approv/i);

    await card.getByRole('button', { name: 'Approve' }).click();
    await expect
      .poll(() => card.getByRole('status').textContent(), { timeout: 30_000 })
      .toContain(`Approved by ${devon.username}`);
    const p: PromotionPlan = await getPlan(dev, NS, 'card-ok');
    expect(p.spec.approvals).toEqual([expect.objectContaining({ user: devon.username, planUID: uid })]);
  });

  it('a plan deleted and created again since the card opened is refused (409) and the card says so; the new plan stays unapproved', async () => {
    await createPlan('card-stale', 'beta');
    const { card } = await openCard('state', { namespace: NS, plan: 'card-stale' });
    const shownUid = (await getPlan(dev, NS, 'card-stale')).metadata.uid!;
    await expect.poll(() => card.locator('#uid').textContent()).toBe(shownUid);

    await dev.delete(`${base}/promotionplans/card-stale`);
    await createPlan('card-stale', 'beta');
    const now = (await getPlan(dev, NS, 'card-stale')).metadata.uid!;
    expect(now).not.toBe(shownUid);

    await card.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => card.getByRole('status').textContent(), { timeout: 30_000 }).toContain('Refused (409)');
    expect(await card.getByRole('status').textContent()).toContain(
      `changed since you opened it: you reviewed uid ${shownUid}, it is now uid ${now}`,
    );
    expect((await getPlan(dev, NS, 'card-stale')).spec.approvals).toBeUndefined();
  });

  it('Reject approves nothing: the plan stays unapproved, the card says so and the person says so in the chat with the uid shown', async () => {
    await createPlan('card-reject', 'gamma');
    const { card } = await openCard('state', { namespace: NS, plan: 'card-reject' });
    const uid = (await getPlan(dev, NS, 'card-reject')).metadata.uid!;
    await card.getByRole('button', { name: 'Reject' }).click();
    await expect.poll(() => card.getByRole('status').textContent()).toContain('Not approved');
    expect(chat).toEqual([
      {
        role: 'user',
        content: [{ type: 'text', text: expect.stringContaining(`PromotionPlan ${NS}/card-reject (uid ${uid}`) }],
      },
    ]);
    expect((await getPlan(dev, NS, 'card-reject')).spec.approvals).toBeUndefined();
  });

  it("shows each app's step in the release's order before approval, and the pull request a result carries: its state, which reviews count, a link only to an http(s) URL", async () => {
    await createPlan('card-order', 'gamma', 'delta');
    const input = { namespace: NS, plan: 'card-order' };
    type Shown = { plan: { candidates: Array<{ application: string; step?: number }> } };
    // The controller records the order while the plan waits; state answers from its cache.
    await expect
      .poll(
        async () =>
          Object.fromEntries(
            (
              (await client.callTool({ name: 'state', arguments: input })).structuredContent as Shown
            ).plan.candidates.map((c) => [c.application, c.step]),
          ),
        { timeout: 30_000 },
      )
      .toEqual({ gamma: 1, delta: 2 });
    // This world delivers by patch, not by pull request: the result the host hands the card carries
    // one as MCP's plan output does (pullRequest.int.test.ts makes a real one).
    const withPullRequest = (url: string) => (r: ToolResult) => {
      const shown = r.structuredContent as { plan: Record<string, unknown> };
      const reviews = [
        { login: 'carol', user: 'gitea:carol', state: 'APPROVED', counts: true },
        { login: 'devon', user: 'gitea:devon', state: 'APPROVED', counts: false, why: 'creator of the plan' },
      ];
      const pullRequest = { forge: 'gitea', repository: 'platform/gitops', branch: 'kpromo/card-order', base: 'main' };
      return {
        ...r,
        structuredContent: {
          ...shown,
          plan: { ...shown.plan, pullRequest: { ...pullRequest, number: 7, url, state: 'open', reviews } },
        },
      };
    };
    const url = 'https://gitea.example.com/platform/gitops/pulls/7';
    const { card, result } = await openCard('state', input, withPullRequest(url));
    const text = (result.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('\n');
    expect(text).toMatch(/ {2}delta: .*\(not started\); step 2, after gamma/);
    await expect
      .poll(() =>
        card
          .getByRole('row', { name: /^delta/ })
          .locator('.step')
          .textContent(),
      )
      .toBe('step 2, after gamma');
    expect(
      await card
        .getByRole('row', { name: /^gamma/ })
        .locator('.step')
        .textContent(),
    ).toBe('step 1');
    const pr = card.getByRole('region', { name: 'Pull request' });
    expect(await pr.locator('p').first().textContent()).toBe(
      `#7 open platform/gitops (kpromo/card-order into main), 1 of 2 review(s) count ${url}`,
    );
    expect(await pr.getByRole('link').getAttribute('href')).toBe(url);
    expect(await pr.getByRole('listitem').allTextContents()).toEqual([
      'carol (gitea:carol) APPROVED: counts',
      'devon (gitea:devon) APPROVED: does not count: creator of the plan',
    ]);

    // Any other scheme is no link: the card says the pull request without it.
    const { card: unsafe } = await openCard('state', input, withPullRequest('javascript:alert(1)'));
    const unsafePr = unsafe.getByRole('region', { name: 'Pull request' });
    await expect.poll(() => unsafePr.locator('p').first().textContent()).toContain('#7 open platform/gitops');
    expect(await unsafePr.getByRole('link').count()).toBe(0);
  });
});

it('the card is self-contained: no external scripts or styles (and afterEach: it fetched nothing)', async () => {
  expect(await cardOf('state')).not.toMatch(/<script[^>]+src=|<link[^>]+href=|@import/i);
});
