// Org-level gates (issue 53), attacked as a team would attack them, on the real control plane with
// the admission policies of examples/deploy/admission-policy.yaml (applyCrds): the platform's
// OrgPolicy in the controller's orgPolicyNamespace says plans into stable need two people, never the
// plan's creator; the team's flow says one. Every test checks what reached stable.
import type { Environment, OrgPolicy, PromotionFlow, PromotionPlan } from '@kpromo/api';
import { planProgress } from '@kpromo/contract';
import { waitFor } from '@kpromo/test-harness';
import {
  callApi,
  createAndApprove,
  deploymentImage,
  grantRole,
  insiderWorld,
  isTerminalPlan,
  promoteAndWait,
  rejection,
  type TestUser,
  uidOf,
  waitPlan,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../src/runtime.js';

const APPS = ['a', 'b', 'c', 'd'];
const world = insiderWorld('orgp', { kubeconfig: inject('kubeconfig'), registries: inject('registries'), apps: APPS });
const { ns: NS, appsNs: APPS_NS, dev, stable, base } = world;
/** The controller's orgPolicyNamespace: only platform admins write here. */
const ORG = world.namespace('org');
const GROUP = 'promotions.kpromo.dev';
const policiesPath = (ns: string, name?: string) =>
  `/apis/${GROUP}/v1alpha1/namespaces/${ns}/orgpolicies${name ? `/${name}` : ''}`;

const devon = world.insider('devon', 'developer');
const rita = world.insider('rita', 'release-manager');
const remy = world.insider('remy', 'release-manager');

const orgPolicy = (rule: Record<string, unknown>, ns = ORG) => ({
  apiVersion: `${GROUP}/v1alpha1`,
  kind: 'OrgPolicy',
  metadata: { name: 'platform', namespace: ns },
  spec: { rules: [{ name: 'stable-gates', environments: { names: ['stable'] }, ...rule }] },
});
const RULE = `OrgPolicy ${ORG}/platform rule stable-gates`;

let ctl: Running;
const post = (path: string, who: TestUser, body: unknown = {}) =>
  callApi(ctl.port, path, { method: 'POST', body, token: who.token });
const errorOf = async (r: Response) => ((await r.json()) as { error: string }).error;
const readyReason = (p: PromotionPlan) => p.status?.conditions?.find((c) => c.type === 'Ready')?.reason;

/** A plan from dev to stable for `app`, created through the API by `who`, not approved. */
async function createPlan(name: string, app: string, who: TestUser): Promise<PromotionPlan> {
  const r = await post('/api/v1/plans', who, { namespace: NS, from: 'dev', to: 'stable', applications: [app], name });
  expect(r.status, await r.clone().text()).toBe(201);
  return ((await r.json()) as { plan: PromotionPlan }).plan;
}
const approve = async (name: string, who: TestUser) =>
  post(`/api/v1/plans/${NS}/${name}/approve`, who, { uid: await uidOf(dev, NS, name) });

beforeAll(async () => {
  await world.setUp();
  // The team's RBAC is as broad as it gets in its own namespace: OrgPolicies included.
  await grantRole(
    dev,
    NS,
    'team-org-policies',
    [{ apiGroups: [GROUP], resources: ['orgpolicies'], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] }],
    [devon, rita],
  );
  await dev.create(policiesPath(ORG), orgPolicy({ approvals: { minCount: 2, forbidSelfApproval: true } }));
  ctl = await world.start({ namespaces: [NS, ORG], orgPolicyNamespace: ORG });
}, 300_000);

afterAll(() => world.stop());

describe('org-level gates', () => {
  it('a team cannot edit, delete or shadow the org policy with team RBAC', async () => {
    for (const who of [devon, rita]) {
      const patch = await rejection(
        world.as(who).jsonPatch(policiesPath(ORG, 'platform'), [{ op: 'remove', path: '/spec/rules/0/approvals' }]),
      );
      expect(patch.status).toBe(403);
      expect((await rejection(world.as(who).delete(policiesPath(ORG, 'platform')))).status).toBe(403);
      expect(
        (
          await rejection(
            world.as(who).create(policiesPath(ORG), { ...orgPolicy({}), metadata: { name: 'mine', namespace: ORG } }),
          )
        ).status,
      ).toBe(403);
    }
    // An OrgPolicy the team may write in its own namespace is ignored: it cannot weaken (or replace) the org's.
    await world.as(devon).create(policiesPath(NS), orgPolicy({ approvals: { minCount: 1 } }, NS));
    const org = await dev.get<OrgPolicy>(policiesPath(ORG, 'platform'));
    expect(org.spec.rules[0].approvals).toEqual({ minCount: 2, forbidSelfApproval: true });
  });

  it('admission refuses a flow laxer than the rule covering its stage, naming the rule and field; a compliant flow and one outside the rule are accepted', async () => {
    // The controller resolves the rules covering each Environment into its status: admission's parameter.
    await waitFor('Environment stable carries the org rule', async () =>
      (await dev.get<Environment>(`${base}/environments/stable`)).status?.orgRules?.some(
        (r) => r.rule === 'stable-gates',
      ),
    );
    const flow = (name: string, stages: object[]) => ({
      apiVersion: `${GROUP}/v1alpha1`,
      kind: 'PromotionFlow',
      metadata: { name, namespace: NS },
      // Selects no application: these flows are only written, never promote.
      spec: { stages, selector: { applications: ['none-such'] } },
    });
    const flows = `${base}/promotionflows`;
    const lax = await rejection(
      dev.create(flows, flow('lax', [{ environment: 'dev' }, { environment: 'stable', approvers: { count: 1 } }])),
    );
    expect(lax.message).toContain(`PromotionFlow ${NS}/lax is laxer than the org policy for environment stable`);
    expect(lax.message).toContain(
      `${RULE} (spec.rules[0].approvals.minCount requires 2 approvals at least; the stage has approvers.count 1)`,
    );
    expect(lax.message).toContain(`${RULE} (spec.rules[0].approvals.forbidSelfApproval requires four eyes`);
    // An automatic stage needs no approval at all: laxer too.
    const auto = await rejection(
      dev.create(flows, flow('auto', [{ environment: 'dev' }, { environment: 'stable', approval: 'auto' }])),
    );
    expect(auto.message).toContain('approvals.minCount requires 2 approvals at least; the stage has approval auto');

    await dev.create(
      flows,
      flow('strict', [
        { environment: 'dev' },
        { environment: 'stable', approvers: { count: 2, forbidSelfApproval: true } },
      ]),
    );
    // stable is its first stage (releases come from it, no plan goes into it); dev is outside the rule.
    await dev.create(flows, flow('outside', [{ environment: 'stable' }, { environment: 'dev', approval: 'auto' }]));

    // A flow written before the rule (main says one approval): kept, relabelled, but not rewritten still laxer.
    await dev.jsonPatch(`${flows}/main`, [{ op: 'add', path: '/metadata/labels', value: { team: 'orgp' } }]);
    const rewrite = await rejection(
      dev.jsonPatch(`${flows}/main`, [{ op: 'add', path: '/spec/stages/1/approvers', value: { count: 1 } }]),
    );
    expect(rewrite.message).toContain(`PromotionFlow ${NS}/main is laxer than the org policy for environment stable`);
    for (const name of ['strict', 'outside']) await dev.delete(`${flows}/${name}`);
  });

  it('a team flow with count 1 into stable where the org says 2: the second approval is still required, at every door', async () => {
    await createPlan('two', 'a', devon);
    expect((await approve('two', rita)).status).toBe(200);
    const one = await waitPlan(dev, NS, 'two', (p) => (p.status?.gate?.approvers ?? []).length === 1);
    expect(one.status?.phase).toBe('Pending');
    expect(one.status?.gate).toMatchObject({ approved: false, required: 2 });
    expect(one.status?.gate?.waitingFor).toContain(
      `1 more approval (required by ${RULE}: spec.rules[0].approvals.minCount`,
    );
    // The read model every door renders (API, CLI, MCP, Backstage, Port) says it.
    const progress = planProgress(one);
    expect(progress.requiredApprovals).toBe(2);
    expect(progress.orgRules?.find((r) => r.field === 'spec.rules[0].approvals.minCount')).toMatchObject({
      orgPolicy: `${ORG}/platform`,
      rule: 'stable-gates',
      stricter: true,
    });
    // As the API hands the plan to the doors that project it (CLI, MCP), read as a release manager.
    const viaApi = (await (
      await callApi(ctl.port, `/api/v1/plans/${NS}/two`, { token: rita.token })
    ).json()) as PromotionPlan;
    expect(planProgress(viaApi).waitingFor).toContain(RULE);
    // The flow is not changed; its status says which org rule decides and why.
    const flow = await waitPlanFlow((f) => (f.status?.orgRules ?? []).length > 0);
    expect(flow.spec.stages[1].approvers).toBeUndefined();
    expect(flow.status?.orgRules?.map((r) => [r.environment, r.field])).toEqual([
      ['stable', 'spec.rules[0].approvals.minCount'],
      ['stable', 'spec.rules[0].approvals.forbidSelfApproval'],
    ]);
    await world.untouched('a');

    expect((await approve('two', remy)).status).toBe(200);
    const done = await waitPlan(dev, NS, 'two', isTerminalPlan, 120_000);
    expect(done.status?.phase).toBe('Complete');
    expect(await deploymentImage(stable, APPS_NS, 'a')).not.toContain(world.stableOld.a);
  }, 240_000);

  it("approving your own plan under the org's four eyes is refused naming the rule, and never counts", async () => {
    await createPlan('mine', 'b', rita);
    await waitPlan(dev, NS, 'mine', (p) => (p.status?.gate?.orgRules ?? []).length > 0);
    const r = await approve('mine', rita);
    expect(r.status).toBe(403);
    expect(await errorOf(r)).toContain(
      `${RULE} (spec.rules[0].approvals.forbidSelfApproval) forbids approving your own plan`,
    );
    // kubectl past the API: admission accepts her own approval, the gate does not count it.
    const uid = await uidOf(dev, NS, 'mine');
    await world
      .as(rita)
      .jsonPatch(`${base}/promotionplans/mine`, [
        { op: 'add', path: '/spec/approvals', value: [{ user: rita.username, groups: rita.groups, planUID: uid }] },
      ]);
    expect((await approve('mine', remy)).status).toBe(200);
    const p = await waitPlan(dev, NS, 'mine', (x) => (x.status?.gate?.approvers ?? []).length === 2);
    expect(p.status?.gate?.approved).toBe(false);
    expect(p.status?.gate?.approvers?.find((a) => a.user === rita.username)).toMatchObject({
      counted: false,
      why: 'creator of the plan',
    });
    await world.untouched('b');
  }, 240_000);

  it('a requirement only the flow can meet holds an approved plan (OrgPolicy); lifted, promote-and-wait completes on one approval', async () => {
    await dev.jsonPatch(policiesPath(ORG, 'platform'), [
      {
        op: 'replace',
        path: '/spec/rules/0',
        value: { name: 'stable-gates', environments: { names: ['stable'] }, requireVerification: true },
      },
    ]);
    const held = await createAndApprove(ctl.port, {
      namespace: NS,
      from: 'dev',
      to: 'stable',
      applications: ['c'],
      name: 'unverified',
    });
    const p = await waitPlan(dev, NS, held.metadata.name, (x) => readyReason(x) === 'OrgPolicy');
    expect(p.status?.conditions?.find((c) => c.type === 'Ready')?.message).toContain(
      `${RULE} (spec.rules[0].requireVerification) requires at least one verification check for stable; PromotionFlow main has stages[1].verification: 0 checks`,
    );
    await world.untouched('c');
    // The platform lifts the rule: the held plan goes on by itself, and a new one needs one approval.
    await dev.delete(policiesPath(ORG, 'platform'));
    expect((await waitPlan(dev, NS, 'unverified', isTerminalPlan, 120_000)).status?.phase).toBe('Complete');
    const next = await promoteAndWait(ctl.port, dev, { namespace: NS, from: 'dev', to: 'stable', applications: ['d'] });
    expect(next.status?.phase).toBe('Complete');
    expect(next.status?.gate?.orgRules).toBeUndefined();
  }, 240_000);
});

/** The flow "main" once `pred` holds. */
async function waitPlanFlow(pred: (f: PromotionFlow) => boolean): Promise<PromotionFlow> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const f = await dev.get<PromotionFlow>(`${base}/promotionflows/main`);
    if (pred(f)) return f;
    if (Date.now() > deadline) throw new Error(`flow main: ${JSON.stringify(f.status)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
