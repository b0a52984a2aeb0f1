// Agents as principals (docs/agents.md, "Agents as principals"), attacked on the real control plane
// with kpromo's admission policies installed: an agent (a static-token identity the controller
// config marks as agent release-bot) calls alone and, through x-kpromo-user, for a person. Its
// rights are its AgentPolicy intersected with the RBAC of whoever it acts as; every refusal names
// the rule (resource and field), and every record names the agent and the person.
import type { AgentPolicy, PromotionPlan } from '@kpromo/api';
import { waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  callApi,
  deploymentImage,
  grantClusterRole,
  grantRole,
  isTerminalPlan,
  type TestUser,
  testTokensFile,
  twoStageWorld,
  waitPlan,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../src/runtime.js';

const APPS = ['alpha', 'beta', 'gamma', 'delta', 'omega'];
const world = twoStageWorld('agt', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: APPS,
  flow: false,
});
const { ns: NS, appsNs: APPS_NS, dev, stable } = world;
/** The controller's line-stop namespace: a kill switch there stops every agent everywhere. */
const OPS = world.namespace('ops');
const GROUP = 'promotions.kpromo.dev';

const bot = world.user('release-bot');
const otherBot = world.user('deploy-bot');
/** alice may create plans and approve into stable; carol may only create plans; bob approves. */
const alice = world.user('alice');
const carol = world.user('carol');
const bob = world.user('bob');
const agents = { identities: { [bot.username]: 'release-bot', [otherBot.username]: 'deploy-bot' } };

let ctl: Running;
const ungrant: Array<() => Promise<void>> = [];

/** POST /api/v1/plans as `who` (alone), or as `who` for `forUser` (x-kpromo-user, as a portal session). */
const createPlan = (who: TestUser, body: Record<string, unknown>, forUser?: TestUser) =>
  callApi(ctl.port, '/api/v1/plans', {
    method: 'POST',
    token: who.token,
    body: { namespace: NS, from: 'dev', to: 'stable', ...body },
    ...(forUser ? { headers: { 'x-kpromo-user': forUser.username } } : {}),
  });
const errorOf = async (r: Response) => ((await r.json()) as { error: string }).error;
const planOf = async (r: Response) => ((await r.json()) as { plan: PromotionPlan }).plan;

const policy = (spec: AgentPolicy['spec'], name = 'bots', namespace = NS) => ({
  kind: 'AgentPolicy',
  metadata: { name, namespace },
  spec,
});
/** release-bot and deploy-bot: plan, promote, roll back and stop the line in stable, one app per plan. */
const BOTS: AgentPolicy['spec'] = {
  agents: ['release-bot', 'deploy-bot'],
  rules: [{ environments: ['stable'], operations: ['promote', 'rollback', 'stopLine'], maxApplicationsPerPlan: 1 }],
};

beforeAll(async () => {
  await world.seed();
  // Non-gated: stable runs an agent's plan without a person (the controller creates no plans of its own).
  await applyCr(
    dev,
    world.flowOf('open', ['alpha', 'beta', 'delta', 'omega'], { approval: 'auto', autoPromotion: { paused: true } }),
  );
  // Gated: a person's approval, never the requester's.
  await applyCr(dev, world.flowOf('gated', ['gamma'], { approvers: { count: 1, forbidSelfApproval: true } }));
  const read = {
    apiGroups: [GROUP],
    resources: ['applications', 'environments', 'promotionflows', 'promotionplans', 'linestops', 'agentpolicies'],
    verbs: ['get', 'list', 'watch'],
  };
  // The agents' own RBAC is generous on purpose: their policy is what holds them.
  const release = {
    apiGroups: [GROUP],
    resources: ['promotionplans'],
    verbs: ['create', 'patch', 'approve', 'rollback'],
  };
  const stops = { apiGroups: [GROUP], resources: ['linestops'], verbs: ['create'] };
  await grantRole(dev, NS, 'agents', [read, release, stops], [bot, otherBot, alice, bob]);
  // release-bot may write AgentPolicies (RBAC) but holds no govern: admission keeps them the platform's.
  await grantRole(
    dev,
    NS,
    'bot-policies',
    [{ apiGroups: [GROUP], resources: ['agentpolicies'], verbs: ['get', 'create', 'update', 'patch'] }],
    [bot],
  );
  await grantRole(
    dev,
    NS,
    'planners',
    [read, { apiGroups: [GROUP], resources: ['promotionplans'], verbs: ['create'] }],
    [carol],
  );
  // A portal session: the agent acts for the person it names, as the Backstage backend does.
  ungrant.push(
    await grantClusterRole(
      dev,
      `agt-impersonate-${world.run}`,
      [
        {
          apiGroups: [''],
          resources: ['users'],
          verbs: ['impersonate'],
          resourceNames: [alice.username, carol.username],
        },
      ],
      [bot],
    ),
  );
  await applyCr(dev, policy(BOTS));
  ctl = await world.start(
    {
      namespaces: [NS, OPS],
      lineStopNamespace: OPS,
      auth: { staticTokensFile: testTokensFile([bot, otherBot, alice, carol, bob]), agents },
    },
    [],
    'open',
  );
}, 240_000);

afterAll(async () => {
  await world.stop();
  for (const u of ungrant) await u();
});

describe('an agent alone', () => {
  it('promotes one application into the non-gated stage within its policy; plan, Event, condition and history name the agent', async () => {
    const r = await createPlan(bot, { flow: 'open', applications: ['alpha'], name: 'bot-alpha' });
    expect(r.status, await r.clone().text()).toBe(201);
    const plan = await planOf(r);
    expect(plan.spec).toMatchObject({ requestedBy: bot.username, requestedByAgent: 'release-bot' });
    expect(plan.spec.approvals).toBeUndefined();
    const done = await waitPlan(dev, NS, 'bot-alpha', isTerminalPlan);
    expect(done.status?.phase).toBe('Complete');
    expect(await deploymentImage(stable, APPS_NS, 'alpha')).toContain(world.devDigest.alpha);
    const approved = done.status?.conditions?.find((c) => c.type === 'Approved');
    expect(approved?.message).toBe(
      `requested by agent release-bot for ${bot.username}, into a non-gated stage: no approval needed`,
    );
    const events = await dev.get<{ items: Array<{ reason: string; message: string }> }>(
      `/api/v1/namespaces/${NS}/events?fieldSelector=involvedObject.name=bot-alpha`,
    );
    expect(events.items.find((e) => e.reason === 'Approved')?.message).toContain(
      `requested by agent release-bot for ${bot.username}`,
    );
    const entry = await waitFor(
      'history entry of bot-alpha',
      async () => {
        const h = await callApi(ctl.port, `/api/v1/history?namespace=${NS}`);
        const items = ((await h.json()) as { items: Array<Record<string, unknown>> }).items;
        return items.find((e) => e.plan === 'bot-alpha');
      },
      30_000,
    );
    expect(entry).toMatchObject({ requestedBy: bot.username, requestedByAgent: 'release-bot' });
  });

  it('is refused a plan of two applications, naming AgentPolicy maxApplicationsPerPlan; nothing is created', async () => {
    const r = await createPlan(bot, { flow: 'open', applications: ['beta', 'delta'], name: 'bot-two' });
    expect(r.status).toBe(403);
    expect(await errorOf(r)).toContain(
      `AgentPolicy ${NS}/bots spec.rules[0].maxApplicationsPerPlan is 1, the plan holds 2 applications`,
    );
    expect(await dev.getOrUndefined(`${world.base}/promotionplans/bot-two`)).toBeUndefined();
    await world.untouched('beta');
  });

  it('is refused outside its time windows, naming AgentPolicy windows', async () => {
    const closed = { name: 'long-ago', start: '2020-01-01T00:00:00Z', end: '2020-01-02T00:00:00Z' };
    await applyCr(dev, policy({ ...BOTS, rules: [{ ...BOTS.rules![0], windows: [closed] }] }));
    try {
      const r = await createPlan(bot, { flow: 'open', applications: ['beta'], name: 'bot-late' });
      expect(r.status).toBe(403);
      expect(await errorOf(r)).toContain(`AgentPolicy ${NS}/bots spec.rules[0].windows are all closed now`);
    } finally {
      await applyCr(dev, policy(BOTS));
    }
    await world.untouched('beta');
  });

  it('is refused a plan into a gated stage (its policy has no plan operation), naming the flow stage that gates it; asking to approve is refused as such', async () => {
    const r = await createPlan(bot, { flow: 'gated', applications: ['gamma'], name: 'bot-gated' });
    expect(r.status).toBe(403);
    expect(await errorOf(r)).toContain(`PromotionFlow ${NS}/gated spec.approval gates the stage`);
    const approving = await createPlan(bot, { flow: 'open', applications: ['beta'], approve: true, expect: {} });
    expect(approving.status).toBe(403);
    expect(await errorOf(approving)).toContain('an agent never approves');
    await world.untouched('gamma');
  });

  it('cannot change its own AgentPolicy: that is governed (verb govern)', async () => {
    const asBot = world.as(bot);
    const change = policy({ ...BOTS, rules: [{ operations: ['promote', 'rollback', 'stopLine', 'plan'] }] });
    await expect(applyCr(asBot, change)).rejects.toThrow(/needs verb govern on agentpolicies\/bots/);
  });
});

describe('an agent for a person', () => {
  it('for carol (who may create plans but not approve into stable) cannot promote into the non-gated stage: RBAC as carol refuses it', async () => {
    const r = await createPlan(bot, { flow: 'open', applications: ['beta'], name: 'for-carol' }, carol);
    expect(r.status).toBe(403);
    expect(await errorOf(r)).toContain(
      `agent release-bot for ${carol.username} may not approve plans into environment stable`,
    );
    await world.untouched('beta');
  });

  it('for alice promotes within its policy and hers; the plan records both, and the policy still limits what alice could do herself', async () => {
    const two = await createPlan(bot, { flow: 'open', applications: ['beta', 'delta'] }, alice);
    expect(two.status).toBe(403);
    expect(await errorOf(two)).toContain('spec.rules[0].maxApplicationsPerPlan');
    const r = await createPlan(bot, { flow: 'open', applications: ['beta'], name: 'for-alice' }, alice);
    expect(r.status, await r.clone().text()).toBe(201);
    expect((await planOf(r)).spec).toMatchObject({ requestedBy: alice.username, requestedByAgent: 'release-bot' });
    const done = await waitPlan(dev, NS, 'for-alice', isTerminalPlan);
    expect(done.status?.phase).toBe('Complete');
    expect(done.status?.conditions?.find((c) => c.type === 'Approved')?.message).toContain(
      `requested by agent release-bot for ${alice.username}`,
    );
  });
});

describe("an agent's approval", () => {
  it('never satisfies four-eyes: refused through the API, written with kubectl it does not count; a person’s does', async () => {
    const r = await callApi(ctl.port, '/api/v1/plans', {
      method: 'POST',
      token: bob.token,
      body: { namespace: NS, flow: 'gated', from: 'dev', to: 'stable', applications: ['gamma'], name: 'bobs' },
    });
    expect(r.status, await r.clone().text()).toBe(201);
    const uid = (await planOf(r)).metadata.uid;
    const api = await callApi(ctl.port, `/api/v1/plans/${NS}/bobs/approve`, {
      method: 'POST',
      token: bot.token,
      body: { uid },
    });
    expect(api.status).toBe(403);
    expect(await errorOf(api)).toContain('an agent never approves');
    // The agent's identity holds the approve verb, so admission lets it write its own approval.
    await world
      .as(bot)
      .jsonPatch(`${world.base}/promotionplans/bobs`, [
        { op: 'add', path: '/spec/approvals', value: [{ user: bot.username, planUID: uid }] },
      ]);
    const held = await waitPlan(dev, NS, 'bobs', (p) => (p.status?.gate?.approvers ?? []).length === 1);
    expect(held.status?.phase).toBe('Pending');
    expect(held.status?.gate).toMatchObject({
      approved: false,
      approvers: [{ user: bot.username, counted: false, why: "agent release-bot: an agent's approval never counts" }],
    });
    await world.untouched('gamma');
    // A person (the kubeconfig's admin, with kubectl) approves: that counts.
    await dev.jsonPatch(`${world.base}/promotionplans/bobs`, [
      { op: 'add', path: '/spec/approvals/-', value: { user: 'kpromo-admin', planUID: uid } },
    ]);
    const approved = await waitPlan(dev, NS, 'bobs', (p) => p.status?.gate?.approved === true);
    expect(approved.status?.gate?.approvers?.map((a) => [a.user, a.counted])).toEqual([
      [bot.username, false],
      ['kpromo-admin', true],
    ]);
  });
});

describe('the kill switch', () => {
  it('in the line-stop namespace stops every agent at once, alone and for a person, in every operation but reading', async () => {
    await applyCr(dev, policy({ agents: ['nobody'], killSwitch: true }, 'stop-all-agents', OPS));
    const rule = `AgentPolicy ${OPS}/stop-all-agents spec.killSwitch is on`;
    try {
      const alone = await createPlan(bot, { flow: 'open', applications: ['omega'] });
      expect(alone.status).toBe(403);
      expect(await errorOf(alone)).toContain(rule);
      const other = await createPlan(otherBot, { flow: 'open', applications: ['omega'] });
      expect(other.status).toBe(403);
      expect(await errorOf(other)).toContain(rule);
      const forAlice = await createPlan(bot, { flow: 'open', applications: ['omega'] }, alice);
      expect(forAlice.status).toBe(403);
      expect(await errorOf(forAlice)).toContain(rule);
      const stop = await callApi(ctl.port, '/api/v1/linestops', {
        method: 'POST',
        token: bot.token,
        body: { namespace: NS, reason: 'the agent saw errors climbing in stable' },
      });
      expect(stop.status).toBe(403);
      expect(await errorOf(stop)).toContain(rule);
      // People are not agents: alice alone still promotes.
      const herself = await createPlan(alice, { flow: 'open', applications: ['omega'], name: 'alice-omega' });
      expect(herself.status, await herself.clone().text()).toBe(201);
      expect((await planOf(herself)).spec.requestedByAgent).toBeUndefined();
      // Reading stays.
      expect((await callApi(ctl.port, `/api/v1/plans?namespace=${NS}`, { token: bot.token })).status).toBe(200);
    } finally {
      await dev.delete(`/apis/${GROUP}/v1alpha1/namespaces/${OPS}/agentpolicies/stop-all-agents`);
    }
    await world.untouched('delta');
  });
});
