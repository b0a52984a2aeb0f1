import { afterEach, describe, expect, it } from 'vitest';
import {
  guardedAnswer,
  MemoryStatus,
  notificationOf,
  planEvents,
  testNotifier,
} from '../../../test/support/notifierHarness.js';
import { discordMessageProblems, type SaasReceivers, startSaasReceivers } from '../../../test/support/saasReceivers.js';
import {
  DISCORD_LIMITS,
  type DiscordEmbed,
  discordEmbed,
  discordMessage,
  discordUrl,
  discordVerdict,
  embedChars,
  fitEmbeds,
} from './discord.js';

const [approved, promoted, complete] = planEvents();
let r: SaasReceivers | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

describe('discordEmbed and the message limits', () => {
  it('builds an embed with the event as title, facts as fields and no mentions allowed', () => {
    const m = discordMessage([discordEmbed(promoted)]);
    expect(m).toEqual({
      embeds: [
        {
          title: 'cart v1.2.0 promoted to production',
          color: 0x2eb67d,
          timestamp: '2026-01-01T00:01:00Z',
          fields: [
            { name: 'Plan', value: 'team-a/shop-42', inline: true },
            { name: 'Flow', value: 'shop', inline: true },
            { name: 'Stage', value: 'staging → production', inline: true },
            { name: 'Application', value: 'cart', inline: true },
            { name: 'Tag', value: 'v1.2.0', inline: true },
            { name: 'Digest', value: '`cccccccccccc`', inline: true },
          ],
          footer: { text: 'kpromo · AppPromoted' },
        },
      ],
      allowed_mentions: { parse: [] },
    });
    expect(discordMessageProblems(m)).toEqual([]);
  });

  it('keeps the newest embeds within 10 per message and 6000 characters', () => {
    const many = Array.from({ length: 14 }, (_, i) => ({ ...discordEmbed(approved), title: `event ${i}` }));
    expect(fitEmbeds(many).map((x) => x.title)).toEqual(many.slice(-10).map((x) => x.title));
    const big: DiscordEmbed[] = Array.from({ length: 5 }, (_, i) => ({
      title: `big ${i}`,
      description: 'd'.repeat(1990),
    }));
    const fitted = fitEmbeds(big);
    expect(fitted.map((x) => x.title)).toEqual(['big 2', 'big 3', 'big 4']);
    expect(fitted.reduce((n, x) => n + embedChars(x), 0)).toBeLessThanOrEqual(DISCORD_LIMITS.total);
    const long = discordEmbed({ ...promoted, type: 'AppFailed', plan: 'p'.repeat(400), message: 'm'.repeat(9000) });
    expect(long.title?.length).toBeLessThanOrEqual(DISCORD_LIMITS.title);
    expect(discordMessageProblems(discordMessage([long]))).toEqual([]);
  });

  it('builds message URLs keeping the webhook query (thread_id)', () => {
    const hook = 'https://discord.com/api/webhooks/1/tok?thread_id=99';
    expect(discordUrl(hook, { wait: true })).toBe('https://discord.com/api/webhooks/1/tok?thread_id=99&wait=true');
    expect(discordUrl(hook, { messageId: '42' })).toBe(
      'https://discord.com/api/webhooks/1/tok/messages/42?thread_id=99',
    );
  });

  it("waits Discord's retry_after on 429 and names Discord's error code otherwise", () => {
    const limited = guardedAnswer(
      429,
      { message: 'You are being rate limited.', retry_after: 0.25, global: false },
      {
        'retry-after': '1',
      },
    );
    expect(discordVerdict(limited, 'D')).toMatchObject({ ok: false, retry: true, retryAfterMs: 250 });
    expect(discordVerdict(guardedAnswer(404, { message: 'Unknown Webhook', code: 10015 }), 'D')).toMatchObject({
      ok: false,
      retry: false,
      error: 'D answered HTTP 404 (Discord error 10015: Unknown Webhook)',
    });
  });
});

describe('discord target against a local Discord stand-in', () => {
  it('posts a plan once (?wait=true) and edits that message with each later event, after a 429', async () => {
    r = await startSaasReceivers({ slackToken: 'x', githubToken: 'x', rateLimitOnce: ['discord'] });
    const status = new MemoryStatus();
    const { run, deliveries } = testNotifier(
      [notificationOf('dc', { discord: { webhookSecretRef: { name: 'dc' } } })],
      {
        secrets: { dc: { url: r.urls.discord } },
        annotations: { dc: { 'promotions.kpromo.dev/destinations': `http://${r.host}/` } },
        status,
      },
    );
    await run([approved, promoted, complete]);
    expect(r.problems).toEqual([]);
    expect(deliveries.map((d) => d.outcome.ok)).toEqual([true, true, true]);
    const calls = r.of('discord');
    expect(calls.map((c) => `${c.method} ${c.url.replace(/^.*\/webhooks\/\d+\/\w+/, '')}`)).toEqual([
      'POST ?wait=true', // 429
      'POST ?wait=true',
      `GET /messages/${status.statuses.get('dc')?.threads?.[0].id}`,
      `PATCH /messages/${status.statuses.get('dc')?.threads?.[0].id}`,
      `GET /messages/${status.statuses.get('dc')?.threads?.[0].id}`,
      `PATCH /messages/${status.statuses.get('dc')?.threads?.[0].id}`,
    ]);
    const id = status.statuses.get('dc')?.threads?.[0].id as string;
    const message = r.discordMessage(id) as { embeds: DiscordEmbed[] };
    expect(message.embeds.map((x) => x.title)).toEqual([
      'Plan team-a/shop-42 approved: staging → production',
      'cart v1.2.0 promoted to production',
      'Plan team-a/shop-42 complete: staging → production',
    ]);
    expect(
      calls.filter((c) => c.method !== 'GET').map((c) => (c.json as { allowed_mentions: unknown }).allowed_mentions),
    ).toEqual(Array(4).fill({ parse: [] }));
  });

  it('starts a new message when the plan message was deleted', async () => {
    r = await startSaasReceivers({ slackToken: 'x', githubToken: 'x' });
    const n = notificationOf(
      'dc',
      { discord: { webhookSecretRef: { name: 'dc' } } },
      {
        threads: [{ plan: 'shop-42', scope: 'discord', id: '777', time: '2026-01-01T00:00:00Z' }],
      },
    );
    const status = new MemoryStatus();
    const { run, deliveries } = testNotifier([n], {
      secrets: { dc: { url: r.urls.discord } },
      annotations: { dc: { 'promotions.kpromo.dev/destinations': `http://${r.host}/` } },
      status,
    });
    await run([promoted]);
    expect(deliveries[0].outcome.ok).toBe(true);
    expect(r.of('discord').map((c) => c.method)).toEqual(['GET', 'POST']);
    const anchor = status.statuses.get('dc')?.threads?.[0];
    expect(anchor?.id).not.toBe('777');
    expect(r.discordMessage(anchor?.id as string)).toBeDefined();
  });
});
