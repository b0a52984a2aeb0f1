import { afterEach, describe, expect, it } from 'vitest';
import { guardedAnswer, notificationOf, planEvents, testNotifier } from '../../../test/support/notifierHarness.js';
import { type SaasReceivers, startSaasReceivers, teamsMessageProblems } from '../../../test/support/saasReceivers.js';
import { teamsMessage, teamsVerdict } from './msteams.js';

const [approved, promoted] = planEvents();
let r: SaasReceivers | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

describe('teamsMessage (Adaptive Card in a Workflows message)', () => {
  it('has the documented envelope with an Adaptive Card 1.5', () => {
    const m = teamsMessage(promoted);
    // The envelope of Microsoft's example (connectors-using#send-adaptive-cards-using-an-incoming-webhook).
    expect(m).toMatchObject({
      type: 'message',
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          contentUrl: null,
          content: {
            $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
            type: 'AdaptiveCard',
            version: '1.5',
          },
        },
      ],
    });
    const body = m.attachments[0].content.body;
    expect(body[0]).toMatchObject({ type: 'TextBlock', text: 'cart v1.2.0 promoted to production', color: 'Good' });
    expect(body[1]).toEqual({
      type: 'FactSet',
      facts: [
        { title: 'Plan', value: 'team-a/shop-42' },
        { title: 'Flow', value: 'shop' },
        { title: 'Stage', value: 'staging → production' },
        { title: 'Application', value: 'cart' },
        { title: 'Tag', value: 'v1.2.0' },
        { title: 'Digest', value: 'cccccccccccc' },
      ],
    });
    expect(teamsMessageProblems(m)).toEqual([]);
  });

  it('colours failures and cuts long messages', () => {
    const m = teamsMessage({ ...promoted, type: 'AppFailed', message: 'y'.repeat(10_000) });
    const body = m.attachments[0].content.body;
    expect(body[0]).toMatchObject({ color: 'Attention' });
    expect(body[2]).toMatchObject({ type: 'TextBlock', wrap: true });
    expect(body[2].type === 'TextBlock' && body[2].text.length).toBe(2000);
    expect(teamsMessageProblems(m)).toEqual([]);
  });
});

describe('msteams target against a local Teams Workflows stand-in', () => {
  it('posts one card per event (Workflows answer 202, no thread), retrying a 429', async () => {
    r = await startSaasReceivers({ slackToken: 'x', githubToken: 'x', rateLimitOnce: ['teams'] });
    const { run, deliveries } = testNotifier(
      [notificationOf('teams', { msteams: { webhookSecretRef: { name: 'teams' } } })],
      {
        secrets: { teams: { url: r.urls.teams } },
        annotations: { teams: { 'promotions.kpromo.dev/destinations': `http://${r.host}/` } },
      },
    );
    await run([approved, promoted]);
    expect(r.problems).toEqual([]);
    expect(deliveries.map((d) => [d.outcome.ok, d.outcome.status])).toEqual([
      [true, 202],
      [true, 202],
    ]);
    expect(r.of('teams').map((c) => c.headers['content-type'])).toEqual(Array(3).fill('application/json'));
  });

  it('reports a refused card with the Workflows error code only, without retrying', () => {
    const res = guardedAnswer(400, { error: { code: 'InvalidRequestContent', message: '<b>secret detail</b>' } });
    expect(teamsVerdict(res, 'https://x/…')).toMatchObject({
      ok: false,
      retry: false,
      error: 'https://x/… answered HTTP 400 (InvalidRequestContent)',
    });
  });
});
