/**
 * Notification providers end to end: a real plan (real apiserver, registry, controller) notifies
 * Notifications of every kind. Slack, Microsoft Teams, Discord and GitHub cannot run here: the
 * receivers are local SaaS stand-ins (test/support/saasReceivers.ts) that check the documented
 * request shape, limits and auth headers, and answer like the documented APIs (including one 429
 * with Retry-After). Everything else is real: the CRDs with their CEL rules, the Secrets, the image
 * labels read from the registry, and the Notification statuses written through the apiserver.
 */
import type { Notification } from '@kpromo/api';
import { waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  callApi,
  isTerminalPlan,
  pushTestImage,
  twoStageWorld,
  waitPlan,
  waitReady,
  withShown,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KPROMO_TYPES, resourcePath } from '../src/kube/paths.js';
import { verifyWebhookSignature } from '../src/notify/signWebhook.js';
import { createLogger } from '../src/observability/logger.js';
import type { Running } from '../src/runtime.js';
import { receiverSecret, type SaasReceivers, startSaasReceivers } from './support/saasReceivers.js';

const world = twoStageWorld('ntf', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: ['web'],
});
const { ns: NS, appsNs: APPS, repo: REPO, dev, stable, source, target } = world;
const SLACK_TOKEN = 'xoxb-int-test-token';
const GITHUB_TOKEN = 'ghp_int_test_token';
const HMAC = 'int-hmac-secret';
const SHA = 'e'.repeat(40);
const EVENTS = ['PlanApproved', 'AppPromoted', 'AppFailed', 'PlanComplete', 'PlanIncomplete'];
const PLAN = 'ntf-plan';

let r: SaasReceivers;
let ctl: Running;
const logLines: string[] = [];

const secret = (name: string, data: Record<string, string>) => receiverSecret(dev, r, NS, name, data);
const notification = (name: string, target: object) =>
  applyCr(dev, { kind: 'Notification', metadata: { name, namespace: NS }, spec: { events: EVENTS, ...target } });
const getNotification = (name: string) => dev.get<Notification>(resourcePath(KPROMO_TYPES.Notification, NS, name));

beforeAll(async () => {
  // The world installs the CRDs: the Notification CRD must know the new targets and their CEL rules.
  r = await startSaasReceivers({ slackToken: SLACK_TOKEN, githubToken: GITHUB_TOKEN, rateLimitOnce: ['slack-api'] });
  // web: an image without source labels; api: a multi-arch image built from acme/shop-api at SHA.
  await world.seed();
  const labelled = await pushTestImage({
    host: source,
    repository: `${REPO}/api`,
    tag: 'v2.0.0',
    seed: `ntf-${NS}-api`,
    multiArch: true,
    labels: {
      'org.opencontainers.image.source': `http://${r.host}/acme/shop-api`,
      'org.opencontainers.image.revision': SHA,
    },
  });
  const old = await pushTestImage({
    host: target,
    repository: `stable/${REPO}/api`,
    tag: 'v1.0.0',
    seed: `ntf-${NS}-api-old`,
  });
  await applyDeployment(dev, APPS, 'api', `${source}/${REPO}/api:v2.0.0@${labelled.digest}`);
  await applyDeployment(stable, APPS, 'api', `${target}/stable/${REPO}/api:v1.0.0@${old.digest}`);
  await waitReady(dev, APPS, 'api');
  await applyCr(dev, {
    kind: 'Application',
    metadata: { name: 'api', namespace: NS },
    spec: { owner: 'team-a', image: { repository: `${REPO}/api` }, workloads: [{ kind: 'Deployment', name: 'api' }] },
  });

  await secret('slack', { token: SLACK_TOKEN });
  await secret('teams', { url: r.urls.teams });
  await secret('discord', { url: r.urls.discord });
  await secret('github', { token: GITHUB_TOKEN });
  await secret('hmac', { secret: HMAC });
  await notification('slack', {
    slack: { tokenSecretRef: { name: 'slack' }, channel: 'releases', apiURL: r.urls.slackApi },
  });
  await notification('teams', { msteams: { webhookSecretRef: { name: 'teams' } } });
  await notification('discord', { discord: { webhookSecretRef: { name: 'discord' } } });
  await notification('github', {
    github: {
      tokenSecretRef: { name: 'github' },
      apiURL: r.urls.githubApi,
      repositories: ['acme/*'],
      targetURL: 'https://portal.example.com/plans/{namespace}/{plan}',
    },
  });
  await notification('generic', { webhook: { url: r.urls.generic, secretRef: { name: 'hmac' } } });

  const log = createLogger({
    level: process.env.CTL_TEST_LOG ?? 'debug',
    destination: {
      write: (line: string) => {
        logLines.push(line);
        if (process.env.CTL_TEST_LOG) process.stdout.write(line);
      },
    },
  });
  ctl = await world.start({}, [], 'main', { log });
  await waitFor('five Notifications in the cache', async () => ctl.controller.cache.notifications(NS).length === 5);
});

afterAll(async () => {
  await world.stop();
  await r?.close();
});

describe('notification providers on a real plan', () => {
  it('refuses a Notification with two targets (CRD CEL rule)', async () => {
    const err = await notification('two', {
      webhook: { url: 'https://hooks.example.com/x' },
      discord: { webhookSecretRef: { name: 'discord' } },
    }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).toContain('set exactly one of webhook, slack, msteams, discord or github');
  });

  it('notifies every provider of the plan with well-formed, threaded messages and commit statuses', async () => {
    const res = await callApi(ctl.port, '/api/v1/plans', {
      method: 'POST',
      body: await withShown(ctl.port, {
        namespace: NS,
        flow: 'main',
        from: 'dev',
        to: 'stable',
        name: PLAN,
        approve: true,
      }),
    });
    expect(res.status).toBe(201);
    const plan = await waitPlan(dev, NS, PLAN, isTerminalPlan, 150_000);
    expect(plan.status?.phase).toBe('Complete');

    // Four events (PlanApproved, AppPromoted web and api, PlanComplete) to each receiver.
    await waitFor(
      'every provider got PlanComplete',
      async () =>
        r.of('generic').length >= 4 &&
        r.of('teams').length >= 4 &&
        r.of('slack-api').length >= 5 &&
        r.of('discord').filter((c) => c.method !== 'GET').length >= 4 &&
        r.of('github').length >= 2,
      60_000,
    );
    expect(r.problems).toEqual([]);

    // Generic: kpromo's signed JSON.
    const generic = r.of('generic');
    expect(generic.map((c) => c.headers['x-kpromo-event'])).toEqual([
      'PlanApproved',
      'AppPromoted',
      'AppPromoted',
      'PlanComplete',
    ]);
    for (const c of generic)
      expect(
        verifyWebhookSignature(
          HMAC,
          String(c.headers['x-kpromo-timestamp']),
          c.body,
          String(c.headers['x-kpromo-signature']),
        ),
      ).toBe(true);

    // Slack: one 429 (Retry-After), then a root message and three replies in its thread.
    const slack = r.of('slack-api');
    expect(slack).toHaveLength(5);
    expect(slack.every((c) => c.headers.authorization === `Bearer ${SLACK_TOKEN}`)).toBe(true);
    const [limited, root, ...replies] = slack.map((c) => c.json as Record<string, unknown>);
    expect(limited.thread_ts).toBeUndefined();
    expect(root).toMatchObject({ channel: 'releases' });
    expect(root.thread_ts).toBeUndefined();
    expect(replies.map((m) => m.thread_ts)).toEqual([root.ts, root.ts, root.ts]);
    expect(replies.at(-1)).toMatchObject({ reply_broadcast: true });

    // Teams: one Adaptive Card per event.
    const cards = r
      .of('teams')
      .map((c) => c.json as { attachments: Array<{ content: { body: Array<{ text?: string }> } }> });
    expect(cards.map((c) => c.attachments[0].content.body[0].text)).toEqual([
      `Plan ${NS}/${PLAN} approved: dev → stable`,
      expect.stringMatching(/^(web|api) v2\.0\.0-\d{8}T\d{6}Z promoted to stable$/),
      expect.stringMatching(/^(web|api) v2\.0\.0-\d{8}T\d{6}Z promoted to stable$/),
      `Plan ${NS}/${PLAN} complete: dev → stable`,
    ]);

    // Discord: one message for the plan, edited with each later event.
    const discord = r.of('discord');
    expect(discord.filter((c) => c.method === 'POST').map((c) => c.url)).toEqual([
      expect.stringMatching(/\?wait=true$/),
    ]);
    expect(discord.filter((c) => c.method === 'PATCH')).toHaveLength(3);

    // GitHub: pending then success on api's commit; web has no labels and gets none.
    const gh = r.of('github');
    expect(gh.map((c) => c.url)).toEqual(Array(2).fill(`/github/api/v3/repos/acme/shop-api/statuses/${SHA}`));
    expect(gh.map((c) => c.json)).toEqual([
      {
        state: 'pending',
        description: `Plan ${NS}/${PLAN} approved: dev → stable`,
        context: 'kpromo/stable',
        target_url: `https://portal.example.com/plans/${NS}/${PLAN}`,
      },
      {
        state: 'success',
        description: expect.stringMatching(/^api v2\.0\.0-\d{8}T\d{6}Z promoted to stable$/),
        context: 'kpromo/stable',
        target_url: `https://portal.example.com/plans/${NS}/${PLAN}`,
      },
    ]);
  });

  it('records outcomes and thread anchors in the Notification statuses', async () => {
    const slack = await waitFor('slack status', async () => {
      const n = await getNotification('slack');
      return n.status?.delivered === 4 ? n : undefined;
    });
    const root = r.of('slack-api')[1].json as { ts: string };
    expect(slack.status?.threads).toEqual([
      { plan: PLAN, scope: 'slack:releases', id: root.ts, channel: 'C0KPROMO01', time: expect.any(String) },
    ]);
    const discord = await waitFor('discord status', async () => {
      const n = await getNotification('discord');
      return n.status?.delivered === 4 ? n : undefined;
    });
    const id = discord.status?.threads?.[0].id as string;
    expect(r.discordMessage(id)?.embeds).toHaveLength(4);
    // github: pending and api's success delivered; web's AppPromoted (no labels) and PlanComplete skipped.
    const github = await waitFor('github status', async () => {
      const n = await getNotification('github');
      return (n.status?.delivered ?? 0) + (n.status?.skipped ?? 0) === 4 ? n : undefined;
    });
    expect(github.status).toMatchObject({ delivered: 2, skipped: 2 });
    expect(github.status?.failed).toBeUndefined();
    expect(logLines.some((l) => l.includes('"reason":"web: image has no org.opencontainers.image.source'))).toBe(true);
    for (const leaked of [SLACK_TOKEN, GITHUB_TOKEN, HMAC, 'discordsecret', 'teamssecret'])
      expect(logLines.join('')).not.toContain(leaked);
  });
});
