import { validateResource } from '@kpromo/api';
import { afterEach, describe, expect, it } from 'vitest';
import {
  guardedAnswer,
  MemoryStatus,
  notificationOf,
  planEvents,
  testNotifier,
} from '../../../test/support/notifierHarness.js';
import { type SaasReceivers, slackMessageProblems, startSaasReceivers } from '../../../test/support/saasReceivers.js';
import type { ReleaseEvent } from '../../extension/notificationProvider.js';
import { summarizeEvent } from '../eventText.js';
import { selectNotifications } from '../notifier.js';
import { postMessageVerdict, SLACK_LIMITS, slackEscape, slackMessage } from './slack.js';

const [approved, promoted, complete] = planEvents();
let r: SaasReceivers | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

describe('slackMessage (Block Kit)', () => {
  it('roots a plan with a header block and facts, within the documented limits', () => {
    const m = slackMessage(approved, { channel: '#releases' });
    expect(m).toMatchObject({
      channel: '#releases',
      text: 'Plan team-a/shop-42 approved: staging → production',
      blocks: [
        { type: 'header', text: { type: 'plain_text', text: 'Plan team-a/shop-42 approved: staging → production' } },
        { type: 'section', fields: expect.arrayContaining([{ type: 'mrkdwn', text: '*Flow*\nshop' }]) },
        { type: 'context', elements: [{ type: 'mrkdwn', text: 'kpromo · PlanApproved · 2026-01-01T00:00:00Z' }] },
      ],
    });
    expect(m.thread_ts).toBeUndefined();
    expect(slackMessageProblems(m, { api: true })).toEqual([]);
  });

  it('replies in a thread without a header; terminal events are broadcast to the channel', () => {
    const reply = slackMessage(promoted, { channel: 'C0KPROMO01', threadTs: '1503435956.000247' });
    expect(reply.blocks[0]).toEqual({
      type: 'section',
      text: { type: 'mrkdwn', text: ':white_check_mark: *cart v1.2.0 promoted to production*' },
    });
    expect(reply.blocks.some((b) => b.type === 'header')).toBe(false);
    expect(reply).toMatchObject({ thread_ts: '1503435956.000247' });
    expect(reply.reply_broadcast).toBeUndefined();
    expect(slackMessage(complete, { threadTs: '1.2' }).reply_broadcast).toBe(true);
    expect(slackMessageProblems(reply, { api: true })).toEqual([]);
  });

  it('escapes mrkdwn control characters (no @channel, no links) and cuts long text to the limits', () => {
    const e = {
      ...promoted,
      type: 'AppFailed' as const,
      message: `<!channel> see <https://evil|here> & ${'x'.repeat(5000)}`,
    };
    const m = slackMessage(e);
    const body = JSON.stringify(m);
    expect(body).not.toContain('<!channel>');
    expect(body).toContain('&lt;!channel&gt; see &lt;https://evil|here&gt; &amp;');
    const section = m.blocks.find((b) => b.type === 'section' && b.text);
    expect(section?.type === 'section' && section.text?.text.length).toBe(SLACK_LIMITS.sectionText);
    const long = slackMessage({ ...approved, plan: 'p'.repeat(300) });
    expect(long.blocks[0].type === 'header' && long.blocks[0].text.text.length).toBe(SLACK_LIMITS.headerText);
    expect(slackMessageProblems(m, { api: false })).toEqual([]);
    expect(slackMessageProblems(long, { api: false })).toEqual([]);
    expect(slackEscape('a<b>&')).toBe('a&lt;b&gt;&amp;');
  });
});

describe('wave events of a fleet plan', () => {
  const waveFailed: ReleaseEvent = {
    type: 'WaveFailed',
    namespace: 'ns',
    plan: 'p',
    flow: 'shop',
    from: 'stable',
    to: 'prod',
    wave: 'canary',
    clusters: ['prod-eu-1', 'prod-eu-2'],
    message: '2 of 2 cluster(s) failed (failure budget 0)',
    time: '2026-01-01T00:00:00Z',
  };

  it('WaveFailed reads "Plan ns/p: wave canary of prod failed" with the wave and its clusters', () => {
    expect(summarizeEvent(waveFailed)).toEqual({
      headline: 'Plan ns/p: wave canary of prod failed',
      tone: 'failure',
      plan: 'ns/p',
      facts: [
        { name: 'Plan', value: 'ns/p' },
        { name: 'Flow', value: 'shop' },
        { name: 'Stage', value: 'stable → prod' },
        { name: 'Wave', value: 'canary' },
        { name: 'Clusters', value: 'prod-eu-1, prod-eu-2' },
      ],
      message: '2 of 2 cluster(s) failed (failure budget 0)',
    });

    const root = slackMessage(waveFailed, { channel: '#releases' });
    expect(root).toMatchObject({
      text: 'Plan ns/p: wave canary of prod failed: 2 of 2 cluster(s) failed (failure budget 0)',
      blocks: [
        { type: 'header', text: { type: 'plain_text', text: 'Plan ns/p: wave canary of prod failed' } },
        {
          type: 'section',
          fields: [
            { type: 'mrkdwn', text: '*Plan*\nns/p' },
            { type: 'mrkdwn', text: '*Flow*\nshop' },
            { type: 'mrkdwn', text: '*Stage*\nstable → prod' },
            { type: 'mrkdwn', text: '*Wave*\ncanary' },
            { type: 'mrkdwn', text: '*Clusters*\nprod-eu-1, prod-eu-2' },
          ],
        },
        { type: 'section', text: { type: 'mrkdwn', text: '2 of 2 cluster(s) failed (failure budget 0)' } },
        { type: 'context', elements: [{ type: 'mrkdwn', text: 'kpromo · WaveFailed · 2026-01-01T00:00:00Z' }] },
      ],
    });
    expect(slackMessageProblems(root, { api: true })).toEqual([]);
    // In the plan's thread: a failure icon, and shown in the channel too.
    const reply = slackMessage(waveFailed, { channel: 'C0KPROMO01', threadTs: '1503435956.000247' });
    expect(reply.blocks[0]).toEqual({
      type: 'section',
      text: { type: 'mrkdwn', text: ':x: *Plan ns/p: wave canary of prod failed*' },
    });
    expect(reply.reply_broadcast).toBe(true);
  });

  it('every wave event has its headline and tone; a fleet of 100 clusters stays within Slack limits', () => {
    const clusters = Array.from(
      { length: 100 },
      (_, i) => `prod-cluster-with-a-long-name-${String(i).padStart(3, '0')}`,
    );
    const rows = (['WaveStarted', 'WaveWaiting', 'WaveSucceeded', 'WaveFailed'] as const).map((type) => {
      const s = summarizeEvent({ ...waveFailed, type, message: undefined });
      const m = slackMessage({ ...waveFailed, type, clusters }, { threadTs: '1.2' });
      expect(slackMessageProblems(m, { api: false })).toEqual([]);
      return [type, s.headline, s.tone, m.reply_broadcast ?? false];
    });
    expect(rows).toEqual([
      ['WaveStarted', 'Plan ns/p: wave canary of prod started', 'pending', false],
      ['WaveWaiting', 'Plan ns/p: wave canary of prod waits to be continued', 'pending', false],
      ['WaveSucceeded', 'Plan ns/p: wave canary of prod succeeded', 'success', false],
      ['WaveFailed', 'Plan ns/p: wave canary of prod failed', 'failure', true],
    ]);
  });

  it('DriftDetected reads "<app> in <env> runs <version>, which kpromo did not deliver", a failure shown in the channel', () => {
    const drift = {
      ...waveFailed,
      type: 'DriftDetected' as const,
      wave: undefined,
      clusters: undefined,
      application: 'web',
      tag: 'v1.0.0',
      message: 'prod runs v1.0.0, not v2.0.0 that plan p delivered',
    };
    const s = summarizeEvent(drift);
    expect([s.headline, s.tone]).toEqual(['web in prod runs v1.0.0, which kpromo did not deliver', 'failure']);
    const m = slackMessage(drift, { threadTs: '1.2' });
    expect(slackMessageProblems(m, { api: false })).toEqual([]);
    expect(m.reply_broadcast).toBe(true);
  });

  it('a Notification may subscribe to the wave events (CRD schema) and gets them', () => {
    const n = notificationOf('waves', {
      events: ['WaveStarted', 'WaveWaiting', 'WaveSucceeded', 'WaveFailed'],
      slack: { webhookSecretRef: { name: 'slack' } },
    });
    const valid = validateResource(n);
    expect(valid.ok || valid.error.message).toBe(true);
    expect(selectNotifications([n], { ...waveFailed, namespace: 'team-a' })).toEqual([n]);
    expect(selectNotifications([n], { ...waveFailed, namespace: 'team-a', type: 'PlanComplete' })).toEqual([]);
  });
});

describe('postMessageVerdict', () => {
  it('takes channel and ts from the documented success answer', () => {
    // https://api.slack.com/methods/chat.postMessage#examples
    const doc = { ok: true, channel: 'C123ABC456', ts: '1503435956.000247', message: { text: 'Here is a message' } };
    expect(postMessageVerdict(guardedAnswer(200, doc), 'S')).toEqual({
      ok: true,
      value: { channel: 'C123ABC456', ts: '1503435956.000247' },
    });
  });

  it('treats HTTP 200 with ok:false as an error, retried only for transient codes', () => {
    expect(postMessageVerdict(guardedAnswer(200, { ok: false, error: 'channel_not_found' }), 'S')).toMatchObject({
      ok: false,
      error: 'S chat.postMessage failed: channel_not_found',
      retry: false,
    });
    expect(postMessageVerdict(guardedAnswer(200, { ok: false, error: 'ratelimited' }), 'S')).toMatchObject({
      retry: true,
    });
    // Free text from an answer is never repeated.
    expect(postMessageVerdict(guardedAnswer(200, { ok: false, error: 'Bad <script>' }), 'S')).toMatchObject({
      error: 'S chat.postMessage failed: no ok in the answer',
    });
  });

  it('waits Retry-After on 429', () => {
    expect(postMessageVerdict(guardedAnswer(429, '', { 'retry-after': '30' }), 'S')).toMatchObject({
      ok: false,
      retry: true,
      retryAfterMs: 30_000,
      error: 'S answered HTTP 429',
    });
  });
});

describe('slack target against a local Slack stand-in', () => {
  const token = 'xoxb-test-token';

  it('threads a plan: the first message roots it, later events reply (after a 429 with Retry-After)', async () => {
    r = await startSaasReceivers({ slackToken: token, githubToken: 'x', rateLimitOnce: ['slack-api'] });
    const status = new MemoryStatus();
    const { run, deliveries } = testNotifier(
      [
        notificationOf('chat', {
          slack: { tokenSecretRef: { name: 'slack' }, channel: 'releases', apiURL: r.urls.slackApi },
        }),
      ],
      {
        secrets: { slack: { token } },
        annotations: { slack: { 'promotions.kpromo.dev/destinations': r.urls.slackApi } },
        status,
      },
    );
    await run([approved, promoted, complete]);
    expect(r.problems).toEqual([]);
    expect(deliveries.map((d) => d.outcome.ok)).toEqual([true, true, true]);
    expect(deliveries[0].outcome.attempts).toBe(2); // the 429, then the message
    const calls = r.of('slack-api');
    expect(calls.map((c) => c.headers.authorization)).toEqual(Array(4).fill(`Bearer ${token}`));
    const [, root, reply1, reply2] = calls.map((c) => c.json as Record<string, string>);
    expect(root).toMatchObject({ channel: 'releases' });
    expect(root.thread_ts).toBeUndefined();
    expect(reply1).toMatchObject({ channel: 'C0KPROMO01', thread_ts: root.ts });
    expect(reply2).toMatchObject({ channel: 'C0KPROMO01', thread_ts: root.ts, reply_broadcast: true });
    expect(status.statuses.get('chat')).toMatchObject({
      delivered: 3,
      threads: [{ plan: 'shop-42', scope: 'slack:releases', id: root.ts, channel: 'C0KPROMO01' }],
    });
  });

  it('continues the thread a previous controller started (anchor from the status)', async () => {
    r = await startSaasReceivers({ slackToken: token, githubToken: 'x' });
    const n = notificationOf(
      'chat',
      { slack: { tokenSecretRef: { name: 'slack' }, channel: 'releases', apiURL: r.urls.slackApi } },
      {
        threads: [
          {
            plan: 'shop-42',
            scope: 'slack:releases',
            id: '1700000000.000001',
            channel: 'C0KPROMO01',
            time: '2026-01-01T00:00:00Z',
          },
        ],
      },
    );
    const { run, deliveries } = testNotifier([n], {
      secrets: { slack: { token } },
      annotations: { slack: { 'promotions.kpromo.dev/destinations': r.urls.slackApi } },
    });
    await run([promoted]);
    // The stand-in knows no such root (another process made it): it answers thread_not_found.
    expect(deliveries[0].outcome).toMatchObject({ ok: false, error: expect.stringContaining('thread_not_found') });
    expect((r.of('slack-api')[0].json as Record<string, string>).thread_ts).toBe('1700000000.000001');
  });

  it('posts through an incoming webhook without threading', async () => {
    r = await startSaasReceivers({ slackToken: token, githubToken: 'x' });
    const { run, deliveries } = testNotifier(
      [notificationOf('hook', { slack: { webhookSecretRef: { name: 'hook' } } })],
      {
        secrets: { hook: { url: `${r.urls.slackWebhook}\n` } },
        annotations: { hook: { 'promotions.kpromo.dev/destinations': `http://${r.host}/` } },
      },
    );
    await run([approved, promoted]);
    expect(r.problems).toEqual([]);
    expect(deliveries.map((d) => d.outcome.ok)).toEqual([true, true]);
    const bodies = r.of('slack-webhook').map((c) => c.json as Record<string, unknown>);
    expect(bodies.map((b) => b.thread_ts)).toEqual([undefined, undefined]);
    expect(bodies.map((b) => b.channel)).toEqual([undefined, undefined]);
  });

  it('never sends the token anywhere its Secret does not name, nor from a Secret that did not opt in', async () => {
    r = await startSaasReceivers({ slackToken: token, githubToken: 'x' });
    const chat = notificationOf('chat', {
      slack: { tokenSecretRef: { name: 'slack' }, channel: 'releases', apiURL: r.urls.slackApi },
    });
    const field = 'spec.slack.tokenSecretRef of Notification team-a/chat';
    const errorWith = async (o: Parameters<typeof testNotifier>[1]) => {
      const { run, deliveries } = testNotifier([chat], { secrets: { slack: { token } }, ...o });
      await run([approved]);
      return deliveries[0].outcome;
    };
    // Labelled, but its destinations are the public API only.
    expect(
      await errorWith({ annotations: { slack: { 'promotions.kpromo.dev/destinations': 'https://slack.com/api' } } }),
    ).toEqual({
      ok: false,
      attempts: 0,
      error: `Secret team-a/slack (${field}) may be sent only to https://slack.com/api, not to http://${r.host} (spec.slack.apiURL); if it should go there, its owner adds "http://${r.host}/" to annotation promotions.kpromo.dev/destinations`,
    });
    // Labelled without destinations; and not labelled at all (the older url annotation is not enough).
    expect((await errorWith({})).error).toBe(
      `Secret team-a/slack (${field}) names no destinations: its owner must list where it may go in annotation promotions.kpromo.dev/destinations (e.g. "http://${r.host}/")`,
    );
    expect(
      (
        await errorWith({
          labels: { slack: {} },
          annotations: { slack: { 'promotions.kpromo.dev/url': r.urls.slackApi } },
        })
      ).error,
    ).toBe(
      `Secret team-a/slack (${field}) is not marked as a credential kpromo may send: its owner must label it promotions.kpromo.dev/credential=true and list where it may go in annotation promotions.kpromo.dev/destinations (e.g. "http://${r.host}/")`,
    );
    expect(r.received).toEqual([]);
  });
});
