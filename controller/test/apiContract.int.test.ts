// The controller's HTTP API against its contract (@kpromo/contract) on the real control plane: every
// route's answer is checked against the OpenAPI document generated from the contract; GET
// /applications pages and filters server-side; an approval never conflicts with status or metadata
// writes made meanwhile, only with another approval (it is re-read and appended then).
import type { PromotionPlan } from '@kpromo/api';
import { CONTROLLER_API } from '@kpromo/contract';
import { responseChecker } from '@kpromo/contract/testing';
import { waitFor } from '@kpromo/test-harness';
import { applyCr, callApi, getPlan, twoStageWorld, uidOf, waitPlan } from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../src/runtime.js';

const APPS = ['alpha', 'beta', 'delta', 'eps', 'gamma'];
const TEAM = (app: string) => (['alpha', 'beta'].includes(app) ? 'team-b' : 'team-a');
const world = twoStageWorld('contract', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: APPS,
  applications: { owner: TEAM, labels: (app) => ({ tier: app === 'gamma' ? 'web' : 'api' }) },
});
const { ns: NS, dev } = world;
const bob = world.user('bob', ['system:masters']);
const carol = world.user('carol', ['system:masters']);
const check = responseChecker(CONTROLLER_API);
let ctl: Running;

/** Calls the API and checks the answer against the contract's document for `route`. */
async function call(
  route: string,
  path: string,
  init: { method?: 'GET' | 'POST'; body?: unknown; token?: string } = {},
): Promise<{ status: number; body: unknown }> {
  const r = await callApi(ctl.port, `/api/v1${path}`, init);
  const body = await r.json();
  expect(check(init.method ?? 'GET', route, r.status, body), `${init.method ?? 'GET'} ${path} -> ${r.status}`).toEqual(
    [],
  );
  return { status: r.status, body };
}

beforeAll(async () => {
  await world.seed();
  await applyCr(dev, {
    kind: 'PromotionFlow',
    metadata: { name: 'main', namespace: NS },
    spec: {
      stages: [{ environment: 'dev' }, { environment: 'stable', approvers: { count: 2 } }],
      rolloutTimeoutSeconds: 120,
    },
  });
  ctl = await world.start({}, [bob, carol]);
  await waitFor('every app cached', async () => ctl.controller.cache.applications(NS).length === APPS.length, 90_000);
}, 300_000);

afterAll(() => world.stop());

describe('GET /applications pages and filters server-side', () => {
  it('walks every application exactly once in pages of 2, in name order, with the total on each page', async () => {
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const q = new URLSearchParams({ namespace: NS, limit: '2', ...(token ? { continue: token } : {}) });
      const { status, body } = await call('/applications', `/applications?${q}`);
      expect(status).toBe(200);
      const page = body as { items: Array<{ name: string; versions: unknown[] }>; continue?: string; total: number };
      expect(page.items.length).toBeLessThanOrEqual(2);
      expect(page.total).toBe(APPS.length);
      expect(page.items.every((a) => a.versions.length === 2)).toBe(true);
      seen.push(...page.items.map((a) => a.name));
      token = page.continue;
      pages++;
    } while (token && pages < 10);
    expect(seen).toEqual([...APPS].sort());
    expect(pages).toBe(3);
  });

  it('filters by team glob and equality label selector before paging; no limit answers everything', async () => {
    const teamB = await call('/applications', `/applications?namespace=${NS}&teams=team-b`);
    expect((teamB.body as { items: Array<{ name: string }> }).items.map((a) => a.name)).toEqual(['alpha', 'beta']);
    const web = await call('/applications', `/applications?namespace=${NS}&labelSelector=tier%3Dweb&teams=team-*`);
    expect((web.body as { items: Array<{ name: string }> }).items.map((a) => a.name)).toEqual(['gamma']);
    const all = await call('/applications', `/applications?namespace=${NS}`);
    expect((all.body as { items: unknown[]; continue?: string }).items).toHaveLength(APPS.length);
    expect((all.body as { continue?: string }).continue).toBeUndefined();
  });

  it('answers 400 naming the field for a forged continue token, a set-based selector and limit=0', async () => {
    for (const [q, msg] of [
      ['continue=not-a-token', 'continue: is not a token this API returned'],
      ['labelSelector=tier%20in%20(web)', 'labelSelector: "tier in (web)" is not key=value'],
      ['limit=0', 'limit: must be at least 1'],
    ] as const) {
      const { status, body } = await call('/applications', `/applications?namespace=${NS}&${q}`);
      expect(status, q).toBe(400);
      expect((body as { error: string }).error).toContain(msg);
    }
  });
});

describe('every other route answers what the contract documents', () => {
  it('environments, diff and plans; 404 for a plan that does not exist', async () => {
    const envs = await call('/environments', `/environments?namespace=${NS}`);
    expect((envs.body as { items: Array<{ name: string }> }).items.map((e) => e.name).sort()).toEqual([
      'dev',
      'stable',
    ]);
    const d = await call('/diff', `/diff?namespace=${NS}&from=dev&to=stable`);
    expect((d.body as { candidates: unknown[] }).candidates).toHaveLength(APPS.length);
    // team-b only: the other team's three apps are skipped; skippedLimit lists one and counts all three.
    const narrowed = await call('/diff', `/diff?namespace=${NS}&from=dev&to=stable&teams=team-b&skippedLimit=1`);
    expect(narrowed.status).toBe(200);
    const nb = narrowed.body as {
      candidates: Array<{ application: string }>;
      skipped: Array<{ application: string; reason: string }>;
      skippedTotal: number;
      skippedByReason: Record<string, number>;
    };
    expect(nb.candidates.map((c) => c.application).sort()).toEqual(['alpha', 'beta']);
    expect(nb.skipped).toHaveLength(1);
    expect(['delta', 'eps', 'gamma']).toContain(nb.skipped[0].application);
    expect(nb.skippedTotal).toBe(3);
    expect(nb.skippedByReason).toEqual({ NotSelected: 3 });
    const refused = await call('/diff', `/diff?namespace=${NS}&from=dev&to=stable&skippedLimit=10001`);
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toMatch(/skippedLimit/);
    expect((await call('/plans', `/plans?namespace=${NS}`)).status).toBe(200);
    const missing = await call('/plans/{namespace}/{name}', `/plans/${NS}/nope`);
    expect(missing.status).toBe(404);
  });
});

describe('approvals conflict only with approvals', () => {
  it('two approvals sent right after create, while the plan is being written, both land; the plan runs and rolls back', async () => {
    const created = await call('/plans', '/plans', {
      method: 'POST',
      body: { namespace: NS, flow: 'main', from: 'dev', to: 'stable', name: 'race', applications: ['gamma'] },
    });
    expect(created.status).toBe(201);
    // Metadata writes change resourceVersion as the controller's status writes do; neither may make
    // an approval fail.
    const churn = Array.from({ length: 6 }, (_, i) =>
      dev.mergePatch(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans/race`, {
        metadata: { annotations: { [`test.kpromo.dev/churn-${i}`]: String(i) } },
      }),
    );
    const uid = await uidOf(dev, NS, 'race');
    const [b, c] = await Promise.all([
      call('/plans/{namespace}/{name}/approve', `/plans/${NS}/race/approve`, {
        method: 'POST',
        token: bob.token,
        body: { uid },
      }),
      call('/plans/{namespace}/{name}/approve', `/plans/${NS}/race/approve`, {
        method: 'POST',
        token: carol.token,
        body: { uid },
      }),
      ...churn,
    ]);
    expect([b.status, c.status], JSON.stringify([b.body, c.body])).toEqual([200, 200]);
    const plan = await getPlan(dev, NS, 'race');
    expect(plan.spec.approvals?.map((a) => a.user).sort()).toEqual([bob.username, carol.username].sort());
    const done = await waitPlan(dev, NS, 'race', (p: PromotionPlan) => p.status?.phase === 'Complete');
    expect(done.status?.gate).toMatchObject({ approved: true, required: 2 });
    const again = await call('/plans/{namespace}/{name}/approve', `/plans/${NS}/race/approve`, {
      method: 'POST',
      token: bob.token,
      body: { uid },
    });
    expect(again.status).toBe(409);
    const rb = await call('/plans/{namespace}/{name}/rollback', `/plans/${NS}/race/rollback`, {
      method: 'POST',
      body: { name: 'race-back' },
    });
    expect(rb.status).toBe(201);
    expect((rb.body as PromotionPlan).spec).toMatchObject({ action: 'rollback', rollbackOf: 'race' });
    expect((await call('/plans/{namespace}/{name}', `/plans/${NS}/race-back`)).status).toBe(200);
  });
});
