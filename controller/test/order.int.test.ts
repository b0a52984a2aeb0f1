// Order inside a release (issue 53): a "migration" every other app depends on, a "backend", and a
// "frontend" depending on the backend (spec.dependsOn). One plan delivers them in that order, its
// rollback restores them in reverse, a failed backend holds the frontend (it never starts, with the
// reason), and a dependsOn cycle is refused by the API and fails a plan made with kubectl. Real
// controller, real apiservers and registries (the shared two-stage world), workloads on kwok.
import type { AppProgress, PromotionPlan } from '@kpromo/api';
import { planProgress } from '@kpromo/contract';
import { waitFor } from '@kpromo/test-harness';
import {
  applyDeployment,
  appOf,
  approveAsAdmin,
  callApi,
  deploymentImage,
  eventReasons,
  isTerminalPlan,
  promoteAndWait,
  twoStageWorld,
  waitPlan,
  waitReady,
  withShown,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KPROMO_TYPES, resourcePath } from '../src/kube/paths.js';
import type { Running } from '../src/runtime.js';

/** What each app goes after in a promotion. */
const DEPENDS_ON: Record<string, string[]> = { backend: ['migration'], frontend: ['migration', 'backend'] };
const world = twoStageWorld('order', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: ['migration', 'backend', 'frontend'],
  applications: { dependsOn: (app) => DEPENDS_ON[app] },
  // The shared stable cluster may be busy: rollouts there get time.
  flow: { rolloutTimeoutSeconds: 600 },
});
const { ns: NS, appsNs: APPS_NS, repo: REPO, dev, stable, source } = world;
/** A digest in no registry: the backend's copy fails (ImageNotFound). */
const GHOST = `sha256:${'9'.repeat(64)}`;
let ctl: Running;

const at = (p: PromotionPlan, app: string, k: 'startedAt' | 'finishedAt') => {
  const t = appOf(p, app)?.[k];
  if (!t) throw new Error(`${app} has no ${k}: ${JSON.stringify(p.status?.apps)}`);
  return Date.parse(t);
};

/**
 * Follows plan `name` until it is final, recording every state seen (polled every 250 ms) in which
 * an app had left Pending while an app it goes after (`after`) had not succeeded.
 */
async function followOrder(name: string, after: Record<string, string[]>) {
  const outOfOrder: string[] = [];
  const seenWaiting = new Set<string>();
  const p = await waitPlan(
    dev,
    NS,
    name,
    (x) => {
      const phase = new Map((x.status?.apps ?? []).map((a) => [a.application, a]));
      for (const [app, deps] of Object.entries(after)) {
        const a = phase.get(app);
        if (a?.waitsFor?.length) seenWaiting.add(`${app} waits for ${a.waitsFor.join(', ')}`);
        if (!a || a.phase === 'Pending' || a.reason === 'DependencyFailed') continue;
        for (const d of deps)
          if (phase.get(d)?.phase !== 'Succeeded')
            outOfOrder.push(`${app} ${a.phase} while ${d} ${phase.get(d)?.phase}`);
      }
      return isTerminalPlan(x);
    },
    600_000,
  );
  return { p, outOfOrder, seenWaiting };
}

/** The candidates dev → stable the API shows now: application → source digest. */
async function candidates(): Promise<Record<string, string>> {
  const r = await callApi(ctl.port, `/api/v1/diff?namespace=${NS}&from=dev&to=stable`);
  const d = (await r.json()) as { candidates?: Array<{ application: string; from: { digest: string } }> };
  return Object.fromEntries((d.candidates ?? []).map((c) => [c.application, c.from.digest]));
}

beforeAll(async () => {
  await world.seed();
  ctl = await world.start();
  await waitFor(
    'the Applications in the cache',
    async () => ctl.controller.cache.applications(NS).length === 3,
    60_000,
  );
}, 400_000);

afterAll(() => world.stop());

describe('order inside a release', () => {
  let delivered: PromotionPlan;

  it("shows the order while the plan awaits approval (status.order, the API's plan, the read model), then delivers the migration first, the backend, then the frontend", async () => {
    const r = await callApi(ctl.port, '/api/v1/plans', {
      method: 'POST',
      body: await withShown(ctl.port, { namespace: NS, from: 'dev', to: 'stable', name: 'ordered' }),
    });
    expect(r.status, await r.clone().text()).toBe(201);
    const waiting = await waitPlan(dev, NS, 'ordered', (x) => !!x.status?.order, 60_000);
    expect(waiting.status?.phase).toBe('Pending');
    expect(waiting.status?.gate?.approved).toBe(false);
    const sorted = (o: { application: string; after: string[] }[] | undefined) =>
      (o ?? []).map((x) => [x.application, [...x.after].sort()]).sort();
    expect(sorted(waiting.status?.order)).toEqual([
      ['backend', ['migration']],
      ['frontend', ['backend', 'migration']],
    ]);
    // The API's plan carries it, and the read model every door renders gives each app its step.
    const shown = await callApi(ctl.port, `/api/v1/plans/${NS}/ordered`);
    expect(shown.status).toBe(200);
    const viaApi = (await shown.json()) as PromotionPlan;
    expect(sorted(viaApi.status?.order)).toEqual(sorted(waiting.status?.order));
    const steps = Object.fromEntries(
      planProgress(viaApi).apps.map((a) => [a.application, [a.phase, a.step, [...(a.after ?? [])].sort()]]),
    );
    expect(steps).toEqual({
      migration: ['Waiting', 1, []],
      backend: ['Waiting', 2, ['migration']],
      frontend: ['Waiting', 3, ['backend', 'migration']],
    });
    const approved = await callApi(ctl.port, `/api/v1/plans/${NS}/ordered/approve`, {
      method: 'POST',
      body: { uid: viaApi.metadata.uid },
    });
    expect(approved.status, await approved.clone().text()).toBe(200);
    const { p, outOfOrder, seenWaiting } = await followOrder('ordered', DEPENDS_ON);
    delivered = p;
    expect(p.status?.phase, JSON.stringify(p.status?.apps)).toBe('Complete');
    expect(outOfOrder).toEqual([]);
    // Whole-second timestamps: each started no earlier than what it goes after finished.
    expect(at(p, 'backend', 'startedAt')).toBeGreaterThanOrEqual(at(p, 'migration', 'finishedAt'));
    expect(at(p, 'frontend', 'startedAt')).toBeGreaterThanOrEqual(at(p, 'backend', 'finishedAt'));
    // While they waited, status said for what (the frontend waits for both, then the backend only).
    expect([...seenWaiting]).toEqual(expect.arrayContaining(['backend waits for migration']));
    expect([...seenWaiting].some((w) => w.startsWith('frontend waits for'))).toBe(true);
    // Finished apps keep no wait.
    for (const a of p.status?.apps ?? []) expect(a.waitsFor, a.application).toBeUndefined();
  }, 700_000);

  it('rolls back in reverse: the frontend first, the migration last', async () => {
    const r = await callApi(ctl.port, `/api/v1/plans/${NS}/${delivered.metadata.name}/rollback`, {
      method: 'POST',
      body: { approve: true, uid: delivered.metadata.uid },
    });
    expect(r.status, await r.clone().text()).toBe(201);
    const rollback = ((await r.json()) as PromotionPlan).metadata.name;
    // Reversed: an app goes after those that depend on it.
    const { p, outOfOrder } = await followOrder(rollback, {
      migration: ['backend', 'frontend'],
      backend: ['frontend'],
    });
    expect(p.status?.phase, JSON.stringify(p.status?.apps)).toBe('RolledBack');
    expect(outOfOrder).toEqual([]);
    expect(at(p, 'backend', 'startedAt')).toBeGreaterThanOrEqual(at(p, 'frontend', 'finishedAt'));
    expect(at(p, 'migration', 'startedAt')).toBeGreaterThanOrEqual(at(p, 'backend', 'finishedAt'));
    for (const app of ['migration', 'backend', 'frontend'])
      expect(await deploymentImage(stable, APPS_NS, app), app).toContain(world.stableOld[app]);
  }, 700_000);

  it('a failed backend holds the frontend: it never starts, and says which dependency failed', async () => {
    await applyDeployment(dev, APPS_NS, 'backend', `${source}/${REPO}/backend:v2.0.1@${GHOST}`);
    await waitReady(dev, APPS_NS, 'backend');
    await waitFor(
      'the backend in dev as a candidate of its new digest',
      async () => (await candidates()).backend === GHOST,
    );
    const p = await promoteAndWait(ctl.port, dev, { namespace: NS, from: 'dev', to: 'stable' }, { timeoutMs: 600_000 });
    const apps = JSON.stringify(p.status?.apps);
    expect(p.status?.phase, apps).toBe('Incomplete');
    expect(appOf(p, 'migration')?.phase, apps).toBe('Succeeded');
    expect(appOf(p, 'backend'), apps).toMatchObject({ phase: 'Failed', reason: 'ImageNotFound' });
    const frontend = appOf(p, 'frontend') as AppProgress;
    expect(frontend, apps).toMatchObject({
      phase: 'Failed',
      reason: 'DependencyFailed',
      heldBy: 'backend',
      message: 'held: dependency backend failed',
    });
    expect(frontend.startedAt).toBeUndefined();
    expect(frontend.written).toBeFalsy();
    expect(await deploymentImage(stable, APPS_NS, 'frontend')).toContain(world.stableOld.frontend);
    // What every door renders: the read model, and the Event on the plan.
    expect(planProgress(p).apps.find((a) => a.application === 'frontend')).toMatchObject({ heldBy: 'backend' });
    expect(await eventReasons(dev, NS, p.metadata.name)).toContain('DependencyFailed');
  }, 700_000);

  it('a dependsOn cycle: the API refuses the plan naming it; a plan made with kubectl fails before it starts', async () => {
    const path = resourcePath(KPROMO_TYPES.Application, NS, 'backend');
    await dev.jsonPatch(path, [{ op: 'add', path: '/spec/dependsOn/-', value: 'frontend' }]);
    await waitFor(
      'the cycle in the cache',
      async () => ctl.controller.cache.getApplication(NS, 'backend')?.spec.dependsOn?.includes('frontend'),
      30_000,
    );
    const cycle =
      /^dependsOn cycle: (backend → frontend → backend|frontend → backend → frontend); remove one edge: \w+ from spec\.dependsOn of Application \w+, or \w+ from spec\.dependsOn of Application \w+$/;
    const r = await callApi(ctl.port, '/api/v1/plans', {
      method: 'POST',
      body: { namespace: NS, from: 'dev', to: 'stable' },
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toMatch(cycle);

    const shown = await candidates();
    await dev.create(resourcePath(KPROMO_TYPES.PromotionPlan, NS), {
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'PromotionPlan',
      metadata: { name: 'cycle-by-kubectl', namespace: NS },
      spec: {
        flow: 'main',
        from: 'dev',
        to: 'stable',
        candidates: ['backend', 'frontend'].map((application) => ({
          application,
          from: { tag: application === 'backend' ? 'v2.0.1' : 'v2.0.0', digest: shown[application] },
        })),
      },
    });
    await approveAsAdmin(dev, NS, 'cycle-by-kubectl');
    const p = await waitPlan(dev, NS, 'cycle-by-kubectl', isTerminalPlan, 60_000);
    expect(p.status?.phase).toBe('Failed');
    const valid = p.status?.conditions?.find((c) => c.type === 'Valid');
    expect(valid).toMatchObject({ status: 'False', reason: 'DependencyCycle' });
    expect(valid?.message).toMatch(cycle);
    expect(p.status?.apps ?? []).toEqual([]);
  }, 300_000);
});
