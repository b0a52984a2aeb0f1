// "One person, one approver", attacked as an insider with the example roles would attack it, on the
// real control plane with the admission policies of examples/deploy/admission-policy.yaml installed
// (applyCrds): each door names alice differently — `user:default/alice` through the Backstage
// backend, `port:alice@…` through the Port module (both impersonated by the portal's token, as the
// real backend does), `alice@…` with kubectl (an OIDC email claim) — and the platform maps them to
// one person (controller config `persons`). Every test states the attack in its title and checks
// that nothing reached stable until another person approved.
import type { PromotionPlan } from '@kpromo/api';
import { planProgress } from '@kpromo/contract';
import {
  applyCr,
  callApi,
  deploymentImage,
  grantClusterRole,
  grantRole,
  type TestUser,
  twoStageWorld,
  waitPlan,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { KubeRest } from '../src/kube/rest.js';
import type { Running } from '../src/runtime.js';

const APPS = ['alpha', 'beta'];
// No flow "main": each app has a flow of its own (below).
const world = twoStageWorld('opoa', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: APPS,
  flow: false,
});
const { ns: NS, appsNs: APPS_NS, repo: REPO, run: RUN, dev, stable, target, base, flowOf } = world;
const GROUP = 'promotions.kpromo.dev';
const planPath = (name: string) => `${base}/promotionplans/${name}`;

/** alice, the person, and the names each door gives her. */
const ALICE = `alice-${RUN}@example.com`;
const aliceBackstage = `user:default/alice-${RUN}`;
const alicePort = `port:${ALICE}`;
/** kubectl with an OIDC email claim: the identity is the verified address itself. */
const aliceKubectl = ALICE;
const BOB = `bob-${RUN}@example.com`;
const bobBackstage = `user:default/bob-${RUN}`;
/** Not in the mapping (and no prefix rule matches): her own person. */
const carolBackstage = `user:default/carol-${RUN}`;
const IDENTITIES = [aliceBackstage, alicePort, aliceKubectl, bobBackstage, carolBackstage];

/** The platform's mapping, as the chart's config.persons would carry it. */
const persons = {
  identities: { [aliceBackstage]: ALICE, [bobBackstage]: BOB },
  prefixes: [{ prefix: 'port:', person: '{rest}' }],
};

/** The Backstage backend's token user: no kpromo rights, only impersonation of the portal's users. */
const portal = world.user('portal');
const identity = (username: string): TestUser => ({ token: `unused-${username}`, username });

let ctl: Running;
let stableOld: Record<string, string> = {};
let ungrant: (() => Promise<void>) | undefined;

/** A controller call through the portal, acting for `user` (x-kpromo-user), as both portal doors call it. */
const door = (user: string, path: string, body?: unknown) =>
  callApi(ctl.port, path, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body === undefined ? {} : { body }),
    token: portal.token,
    headers: { 'x-kpromo-user': user },
  });
const errorOf = async (r: Response) => ((await r.json()) as { error: string }).error;
/** A direct write as `user`, like `kubectl --as`: admission checks the approval names them. */
const kubectlAs = (user: string): KubeRest => dev.as({ username: user, groups: [] });

/** Creates a plan for `app` through the portal as `user` (what the Backstage backend does). */
async function createThrough(user: string, flow: string, app: string, name: string): Promise<PromotionPlan> {
  const body = { namespace: NS, flow, from: 'dev', to: 'stable', name, applications: [app] };
  const r = await door(user, '/api/v1/plans', body);
  expect(r.status, await r.clone().text()).toBe(201);
  return ((await r.json()) as { plan: PromotionPlan }).plan;
}

/** Nothing of `app` reached stable: its workload still runs the old digest, and no new tag was pushed. */
async function untouched(app: string) {
  expect(await deploymentImage(stable, APPS_NS, app)).toContain(stableOld[app]);
  const tags = await fetch(`http://${target}/v2/stable/${REPO}/${app}/tags/list`).then(
    (r) => r.json() as Promise<{ tags?: string[] }>,
  );
  expect(tags.tags ?? []).toEqual(['v1.0.0']);
}

beforeAll(async () => {
  await world.seed();
  ({ stableOld } = world);
  await applyCr(dev, flowOf('self', ['alpha'], { approvers: { forbidSelfApproval: true } }));
  await applyCr(dev, flowOf('two', ['beta'], { approvers: { count: 2 } }));
  // kpromo-release-manager (examples/deploy/rbac-examples.yaml) for every name of every person.
  await grantRole(
    dev,
    NS,
    'release-managers',
    [
      {
        apiGroups: [GROUP],
        resources: ['applications', 'environments', 'promotionflows', 'promotionplans'],
        verbs: ['get', 'list', 'watch'],
      },
      {
        apiGroups: [GROUP],
        resources: ['promotionplans'],
        verbs: ['create', 'patch', 'approve', 'rollback', 'override-freeze', 'continue'],
      },
    ],
    IDENTITIES.map(identity),
  );
  // Users are cluster-scoped: impersonation is a ClusterRole, limited to these names.
  ungrant = await grantClusterRole(
    dev,
    `opoa-portal-${RUN}`,
    [{ apiGroups: [''], resources: ['users'], verbs: ['impersonate'], resourceNames: IDENTITIES }],
    [portal],
  );
  ctl = await world.start({ persons }, [portal], 'two');
}, 240_000);

afterAll(async () => {
  await world.stop();
  await ungrant?.();
});

describe('forbidSelfApproval judges persons', () => {
  it('alice requests as user:default/alice (Backstage) and approves as port:alice@… (Port) and as alice@… (kubectl) under forbidSelfApproval: neither approval counts, nothing reaches stable; another person approves it', async () => {
    const plan = await createThrough(aliceBackstage, 'self', 'alpha', 'self-1');
    expect(plan.spec.requestedBy).toBe(aliceBackstage);
    const uid = plan.metadata.uid;
    // The Port door records her Port identity as approver (admission: the controller may record it).
    expect((await door(alicePort, `/api/v1/plans/${NS}/self-1/approve`, { uid })).status).toBe(200);
    const first = await waitPlan(dev, NS, 'self-1', (p) => (p.status?.gate?.approvers ?? []).length === 1);
    expect(first.status?.gate).toMatchObject({
      approved: false,
      approvers: [{ user: alicePort, person: ALICE, counted: false }],
    });
    // kubectl as her OIDC identity: admission accepts it, it names its own user.
    await kubectlAs(aliceKubectl).jsonPatch(planPath('self-1'), [
      { op: 'add', path: '/spec/approvals/-', value: { user: aliceKubectl, planUID: uid } },
    ]);
    const held = await waitPlan(dev, NS, 'self-1', (p) => (p.status?.gate?.approvers ?? []).length === 2);
    expect(held.status?.phase).toBe('Pending');
    expect(held.status?.gate).toMatchObject({
      approved: false,
      required: 1,
      approvers: [
        { user: alicePort, person: ALICE, counted: false },
        { user: aliceKubectl, person: ALICE, counted: false },
      ],
    });
    await untouched('alpha');

    // bob is another person: his approval counts.
    expect((await door(bobBackstage, `/api/v1/plans/${NS}/self-1/approve`, { uid })).status).toBe(200);
    const approved = await waitPlan(dev, NS, 'self-1', (p) => p.status?.gate?.approved === true);
    expect(approved.status?.gate?.approvers?.map((a) => [a.user, a.person, a.counted])).toEqual([
      [alicePort, ALICE, false],
      [aliceKubectl, ALICE, false],
      [bobBackstage, BOB, true],
    ]);
  });
});

describe('count judges persons', () => {
  it('alice gives both approvals of count: 2, as alice@… (kubectl) and as port:alice@… (the API refuses it, kubectl writes it): one counts, nothing reaches stable; an unmapped identity counts as its own person', async () => {
    const plan = await createThrough(bobBackstage, 'two', 'beta', 'two-1');
    const uid = plan.metadata.uid;
    await kubectlAs(aliceKubectl).jsonPatch(planPath('two-1'), [
      { op: 'add', path: '/spec/approvals', value: [{ user: aliceKubectl, planUID: uid }] },
    ]);
    // Through the Port door: refused before anything is written, naming who she already approved as.
    const again = await door(alicePort, `/api/v1/plans/${NS}/two-1/approve`, { uid });
    expect(again.status).toBe(409);
    expect(await errorOf(again)).toContain(`is already approved by ${ALICE}`);
    // With kubectl as her Port identity: admission accepts it (it names its writer); it must not count.
    await kubectlAs(alicePort).jsonPatch(planPath('two-1'), [
      { op: 'add', path: '/spec/approvals/-', value: { user: alicePort, planUID: uid } },
    ]);
    const held = await waitPlan(dev, NS, 'two-1', (p) => (p.status?.gate?.approvers ?? []).length === 2);
    expect(held.status?.phase).toBe('Pending');
    expect(held.status?.gate).toMatchObject({
      approved: false,
      required: 2,
      waitingFor: '1 more approval',
      approvers: [
        { user: aliceKubectl, person: ALICE, counted: true },
        { user: alicePort, person: ALICE, counted: false },
      ],
    });
    // Every door renders the one read model (planProgress) of the plan the API answers: the person
    // each approval counted as.
    const shown = await door(bobBackstage, `/api/v1/plans/${NS}/two-1`);
    expect(shown.status).toBe(200);
    expect(planProgress((await shown.json()) as PromotionPlan).approvers).toMatchObject([
      { user: aliceKubectl, person: ALICE, counted: true },
      { user: alicePort, person: ALICE, counted: false },
    ]);
    await untouched('beta');

    // carol's identity is in no mapping: she is her own person, and her approval is the second.
    expect((await door(carolBackstage, `/api/v1/plans/${NS}/two-1/approve`, { uid })).status).toBe(200);
    const approved = await waitPlan(dev, NS, 'two-1', (p) => p.status?.gate?.approved === true);
    expect(approved.status?.gate?.approvers?.at(-1)).toMatchObject({
      user: carolBackstage,
      person: carolBackstage,
      counted: true,
    });
  });
});
