// Stop the line (issue 33): a LineStop holds every plan that has not started and pauses running
// plans at their next app; lifting it lets them go on; a hotfix approved with override-freeze runs
// through it; only RBAC (create/delete on linestops) stops or lifts the line, and admission keeps the
// recorded stopper truthful. Real controller, real apiserver with the admission policies of
// examples/deploy/admission-policy.yaml (applyCrds), real registries, workloads on kwok.
import type { LineStop, PromotionPlan } from '@kpromo/api';
import {
  appOf,
  callApi,
  deploymentImage,
  grantRole,
  isTerminalPlan,
  rejection,
  type TestUser,
  twoStageWorld,
  uidOf,
  waitPlan,
  withShown,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../src/runtime.js';

const APPS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
const world = twoStageWorld('lstop', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: APPS,
  // One app at a time, so that a running plan has apps left to hold when the line stops.
  flow: { concurrency: 1 },
});
const { ns: NS, appsNs: APPS_NS, dev, stable, user, as } = world;
/** The controller's lineStopNamespace: an AllNamespaces LineStop here stops every namespace. */
const GLOBAL = world.namespace('global');
const stopsPath = (ns: string, name?: string) =>
  `/apis/promotions.kpromo.dev/v1alpha1/namespaces/${ns}/linestops${name ? `/${name}` : ''}`;

/** On-call release manager: plans, approvals, override-freeze, and create/delete on linestops. */
const rm = user('rita');
/** A developer: creates plans, holds no right on linestops. */
const devon = user('devon');

let ctl: Running;
let stableOld: Record<string, string> = {};
const post = (path: string, who: TestUser | undefined, body: unknown = {}) =>
  callApi(ctl.port, path, { method: 'POST', body, ...(who ? { token: who.token } : {}) });
const errorOf = async (r: Response) => ((await r.json()) as { error: string }).error;

/** Creates a plan from dev to stable for `apps` through the API, as `who` (approved by them if asked). */
async function createPlan(name: string, apps: string[], who?: TestUser, approve = true): Promise<PromotionPlan> {
  const body = { namespace: NS, from: 'dev', to: 'stable', applications: apps, name, approve };
  // Approved as shown: the digests GET /diff answers now.
  const r = await post('/api/v1/plans', who, approve ? await withShown(ctl.port, body, who?.token) : body);
  expect(r.status, await r.clone().text()).toBe(201);
  return ((await r.json()) as { plan: PromotionPlan }).plan;
}

const readyReason = (p: PromotionPlan) => p.status?.conditions?.find((c) => c.type === 'Ready')?.reason;

beforeAll(async () => {
  await world.seed();
  ({ stableOld } = world);
  const onCall = [
    {
      apiGroups: ['promotions.kpromo.dev'],
      resources: ['linestops'],
      verbs: ['get', 'list', 'watch', 'create', 'delete'],
    },
  ];
  await grantRole(
    dev,
    NS,
    'release-manager',
    [
      ...onCall,
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['promotionplans'],
        verbs: ['get', 'list', 'create', 'patch', 'approve', 'rollback', 'override-freeze'],
      },
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['applications', 'environments', 'promotionflows'],
        verbs: ['get', 'list'],
      },
    ],
    [rm],
  );
  await grantRole(dev, GLOBAL, 'on-call', onCall, [rm]);
  await grantRole(
    dev,
    NS,
    'developer',
    [
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['promotionplans'],
        verbs: ['get', 'list', 'create', 'patch'],
      },
      {
        apiGroups: ['promotions.kpromo.dev'],
        resources: ['applications', 'environments', 'promotionflows'],
        verbs: ['get', 'list'],
      },
    ],
    [devon],
  );
  ctl = await world.start({ namespaces: [NS, GLOBAL], lineStopNamespace: GLOBAL }, [rm, devon]);
}, 300_000);

afterAll(() => world.stop());

describe('stop the line', () => {
  it('a developer may neither stop nor lift the line, and nobody but the controller records someone else as the stopper', async () => {
    const r = await post('/api/v1/linestops', devon, { namespace: NS, reason: 'let me through' });
    expect(r.status).toBe(403);
    expect(await errorOf(r)).toContain(`forbidden: ${devon.username} may not create linestops in namespace ${NS}`);
    const body = (spec: Record<string, unknown>, name = 'forged') => ({
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'LineStop',
      metadata: { name, namespace: NS },
      spec: { reason: 'x', ...spec },
    });
    // kubectl as the developer: RBAC.
    expect((await rejection(as(devon).create(stopsPath(NS), body({ stoppedBy: devon.username })))).status).toBe(403);
    // kubectl as the release manager: allowed by RBAC, but only under their own name and as a person.
    const forged = await rejection(as(rm).create(stopsPath(NS), body({ stoppedBy: 'someone-else' })));
    expect(forged.message).toContain('spec.stoppedBy must be your own user name');
    expect((await rejection(as(rm).create(stopsPath(NS), body({})))).message).toContain('spec.stoppedBy');
    const alert = await rejection(
      as(rm).create(stopsPath(NS), body({ stoppedBy: rm.username, source: { kind: 'Alert', alert: 'HighErrorRate' } })),
    );
    expect(alert.message).toContain('only the kpromo controller');
    const own = await as(rm).create<LineStop>(stopsPath(NS), body({ stoppedBy: rm.username }, 'own'));
    expect(own.spec.stoppedBy).toBe(rm.username);
    // Lifting needs delete on linestops: the developer is refused at the API (as a missing object) and by RBAC.
    expect((await post(`/api/v1/linestops/${NS}/own/lift`, devon)).status).toBe(404);
    expect((await rejection(as(devon).delete(stopsPath(NS, 'own')))).status).toBe(403);
    expect((await post(`/api/v1/linestops/${NS}/own/lift`, rm)).status).toBe(200);
    expect(await dev.getOrUndefined(stopsPath(NS, 'own'))).toBeUndefined();
  });

  it('a stopped line holds an approved plan before it copies anything; lifting it lets the plan run', async () => {
    const r = await post('/api/v1/linestops', rm, { namespace: NS, name: 'inc-1', reason: 'INC-1: checkout 5xx' });
    expect(r.status).toBe(201);
    // The stopper is the authenticated caller.
    expect(await r.json()).toMatchObject({ namespace: NS, name: 'inc-1', scope: 'Namespace', stoppedBy: rm.username });
    const list = await callApi(ctl.port, `/api/v1/linestops?namespace=${NS}`, { token: devon.token });
    // devon may not list LineStops: the list leaves that namespace out.
    expect(((await list.json()) as { items: unknown[] }).items).toEqual([]);
    const seen = await callApi(ctl.port, `/api/v1/linestops?namespace=${NS}`, { token: rm.token });
    expect(((await seen.json()) as { items: Array<{ name: string }> }).items.map((s) => s.name)).toEqual(['inc-1']);

    await createPlan('held', ['a']);
    const held = await waitPlan(dev, NS, 'held', (p) => readyReason(p) === 'LineStopped');
    expect(held.status?.phase).toBe('Pending');
    expect(held.status?.gate?.lineStopped).toEqual({
      lineStop: `${NS}/inc-1`,
      reason: 'INC-1: checkout 5xx',
      stoppedBy: rm.username,
    });
    expect(held.status?.conditions?.find((c) => c.type === 'Ready')?.message).toContain(
      `the line is stopped by ${rm.username} (LineStop ${NS}/inc-1): INC-1: checkout 5xx`,
    );
    expect(await deploymentImage(stable, APPS_NS, 'a')).toContain(stableOld.a);

    // A hotfix: approved with override-freeze (and why) by the release manager, it runs through the stopped line.
    await createPlan('hotfix', ['b'], rm, false);
    const ok = await post(`/api/v1/plans/${NS}/hotfix/approve`, rm, {
      uid: await uidOf(dev, NS, 'hotfix'),
      overrideFreeze: true,
      overrideReason: 'INC-1: b carries the fix for the checkout 5xx',
    });
    expect(ok.status, await ok.clone().text()).toBe(200);
    const hotfix = await waitPlan(dev, NS, 'hotfix', isTerminalPlan, 120_000);
    expect(hotfix.status?.phase).toBe('Complete');
    expect(hotfix.status?.gate?.lineStopped?.overriddenBy).toBe(rm.username);
    expect(hotfix.spec.approvals?.[0]?.overrideReason).toBe('INC-1: b carries the fix for the checkout 5xx');
    // The held plan still holds.
    expect(readyReason(await waitPlan(dev, NS, 'held', () => true))).toBe('LineStopped');

    expect((await post(`/api/v1/linestops/${NS}/inc-1/lift`, rm)).status).toBe(200);
    const done = await waitPlan(dev, NS, 'held', isTerminalPlan, 120_000);
    expect(done.status?.phase).toBe('Complete');
    expect(await deploymentImage(stable, APPS_NS, 'a')).not.toContain(stableOld.a);
  });

  it('an AllNamespaces stop from the line-stop namespace pauses a running plan at its next app; lifted, it finishes', async () => {
    const rest = ['c', 'd', 'e', 'f', 'g', 'h'];
    await createPlan('running', rest);
    await waitPlan(dev, NS, 'running', (p) => (p.status?.apps ?? []).some((a) => a.phase !== 'Pending'));
    const r = await post('/api/v1/linestops', rm, {
      namespace: GLOBAL,
      name: 'freeze-all',
      reason: 'region outage',
      scope: 'AllNamespaces',
    });
    expect(r.status).toBe(201);
    // Apps in flight finish; the ones not started wait with the reason.
    const paused = await waitPlan(
      dev,
      NS,
      'running',
      (p) =>
        (p.status?.apps ?? []).every((a) => a.phase === 'Pending' || a.phase === 'Succeeded') &&
        (p.status?.apps ?? []).some((a) => a.phase === 'Pending' && a.reason === 'LineStopped'),
      60_000,
    );
    expect(paused.status?.phase).toBe('Promoting');
    const succeeded = rest.filter((a) => appOf(paused, a)?.phase === 'Succeeded');
    const waiting = rest.filter((a) => appOf(paused, a)?.phase === 'Pending');
    expect(waiting.length).toBeGreaterThan(0);
    expect(appOf(paused, waiting[0])?.message).toContain(`LineStop ${GLOBAL}/freeze-all`);
    // Nothing more starts while the line is stopped.
    await new Promise((r) => setTimeout(r, 3_000));
    const still = await waitPlan(dev, NS, 'running', () => true);
    expect(rest.filter((a) => appOf(still, a)?.phase === 'Succeeded')).toEqual(succeeded);
    for (const a of waiting) expect(await deploymentImage(stable, APPS_NS, a)).toContain(stableOld[a]);

    expect((await post(`/api/v1/linestops/${GLOBAL}/freeze-all/lift`, rm)).status).toBe(200);
    const done = await waitPlan(dev, NS, 'running', isTerminalPlan, 180_000);
    expect(done.status?.phase).toBe('Complete');
    for (const a of rest) expect(appOf(done, a)?.phase).toBe('Succeeded');
  }, 300_000);
});
