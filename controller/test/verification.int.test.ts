// Verification (issue 33): after an app rolls out, the stage's checks are measured against a real
// Prometheus (built from its Go module by test/prometheus/build.sh) scraping metric endpoints this
// test serves for the sample apps (the numbers are the test's; scraping, PromQL and the query API
// are Prometheus's). A good release passes and the measured values are in the plan's status; a bad
// one (one app's error rate above the bound) fails verification, halts the apps not started and the
// controller rolls the whole release back on its own, leaving every app on its previous digest.
// Real controller and apiserver (with the admission policies), real registries, workloads on kwok.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PromotionPlan } from '@kpromo/api';
import { needComponents, waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  appOf,
  automaticRollbackOf,
  createAndApprove,
  deploymentImage,
  eventReasons,
  isTerminalPlan,
  verificationWorld,
  waitPlan,
} from '@kpromo/test-harness/controller';
import { call, httpClient, ok } from '@kpromo/test-harness/mcpClient';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../src/runtime.js';

await needComponents('prometheus');

const APPS = ['web', 'cart', 'orders', 'shop', 'search'];
const world = verificationWorld('verify', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: APPS,
});
const { ns: NS, appsNs: APPS_NS, repo: REPO, dev, stable } = world;
const rm = world.user('rm');

/**
 * The same for the version being promoted (every series not of the version it replaces, as a
 * canary-versus-stable comparison is written), and for the version it replaces.
 */
const NEW_ERROR_RATE =
  'sum(rate(http_requests_total{app="{application}",version!="{previousVersion}",code="500"}[10s])) / sum(rate(http_requests_total{app="{application}",version!="{previousVersion}"}[10s]))';
const OLD_ERROR_RATE = NEW_ERROR_RATE.replaceAll('!=', '=');

let ctl: Running;
let stableOld: Record<string, string> = {};
/** Release notifications the controller sent to the test's webhook (type and data). */
const hooks: Array<{ type: string; data: { application?: string; plan: string; message?: string } }> = [];
let hookServer: Server;

async function createPlan(name: string, apps: string[]): Promise<void> {
  await createAndApprove(ctl.port, { namespace: NS, from: 'dev', to: 'stable', applications: apps, name }, rm.token);
}

beforeAll(async () => {
  await world.setUp({
    traffic: (metrics) => {
      // Every app serves 20 requests/s; orders' new version is the bad one: a fifth of them fail.
      for (const app of APPS) if (app !== 'search') metrics.setTraffic(app, 'any', 20, app === 'orders' ? 0.2 : 0);
      // search's running version (v1.0.0, seeded in stable) fails 1% of its requests; the new one 4%:
      // within the stage's 5% bound, but 3 points worse than the version it replaces.
      metrics.setTraffic('search', 'v1.0.0', 20, 0.01);
      metrics.setTraffic('search', 'new', 20, 0.04);
    },
    // One app at a time, so that the release has apps verified, failing and not started.
    flow: { concurrency: 1 },
    releaseManagers: [rm],
  });
  ({ stableOld } = world);
  // search adds a check of its own: its error ratio per version against the version it replaces.
  await applyCr(dev, {
    kind: 'Application',
    metadata: { name: 'search', namespace: NS },
    spec: {
      owner: 'team-a',
      image: { repository: `${REPO}/search` },
      workloads: [{ kind: 'Deployment', name: 'search' }],
      verification: {
        checks: [
          {
            name: 'vs-previous',
            prometheus: {
              query: NEW_ERROR_RATE,
              baseline: { query: OLD_ERROR_RATE, maxIncrease: 0.02 },
            },
          },
        ],
      },
    },
  });
  // A Notification webhook on loopback (the egress policy of the test config allows 127.0.0.1).
  hookServer = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      hooks.push(JSON.parse(raw));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hookServer.listen(0, '127.0.0.1', r));
  await applyCr(dev, {
    kind: 'Notification',
    metadata: { name: 'releases', namespace: NS },
    spec: {
      events: ['VerificationFailed', 'PlanRolledBack'],
      webhook: { url: `http://127.0.0.1:${(hookServer.address() as AddressInfo).port}/hook` },
    },
  });
  ctl = await world.start({ mcp: { enabled: true, host: '127.0.0.1', port: 0 } }, [rm]);
}, 300_000);

afterAll(async () => {
  await world.stop();
  await new Promise<void>((r) => (hookServer ? hookServer.close(() => r()) : r()));
});

describe('verification', () => {
  it('a good release is Verifying after its rollout, then Succeeded with the values Prometheus measured', async () => {
    await createPlan('good', ['web']);
    const verifying = await waitPlan(dev, NS, 'good', (p) => appOf(p, 'web')?.phase === 'Verifying', 120_000);
    expect(appOf(verifying, 'web')?.verification).toMatchObject({ verdict: 'Running', onFailure: 'rollbackRelease' });
    const done = await waitPlan(dev, NS, 'good', isTerminalPlan, 120_000);
    expect(done.status?.phase).toBe('Complete');
    const web = appOf(done, 'web')!;
    expect(web).toMatchObject({ phase: 'Succeeded', reason: 'Verified' });
    const check = web.verification!.checks[0]!;
    expect(check).toMatchObject({
      name: 'error-rate',
      kind: 'prometheus',
      condition: '≤ 0.05',
      verdict: 'Passed',
      failures: 0,
    });
    // The query as sent, placeholders replaced, and what Prometheus answered for it.
    expect(check.query).toContain(`app="web"`);
    const values = (check.samples ?? []).filter((s) => s.value !== undefined);
    expect(values.length).toBeGreaterThanOrEqual(2);
    for (const s of values) expect(s).toMatchObject({ value: 0, ok: true });
    // The window was measured for its length: verified no sooner than 6 s after it started.
    const v = web.verification!;
    expect(Date.parse(v.finishedAt!) - Date.parse(v.startedAt)).toBeGreaterThanOrEqual(6_000);
    expect(await deploymentImage(stable, APPS_NS, 'web')).not.toContain(stableOld.web);

    // An agent asking MCP `state` about the plan sees the same evidence.
    const agent = await httpClient(ctl.mcp!.url, rm.token);
    try {
      const state = ok<{ plan: { apps: Array<{ application: string; verification?: Record<string, unknown> }> } }>(
        await call(agent, 'state', { namespace: NS, plan: 'good' }),
      );
      expect(state.plan.apps[0]!.verification).toMatchObject({
        verdict: 'Passed',
        checks: [{ name: 'error-rate', condition: '≤ 0.05', verdict: 'Passed', values: expect.arrayContaining([0]) }],
      });
    } finally {
      await agent.close();
    }
  });

  it("an app's own check compares the new version with the one it replaced, in the real Prometheus, and fails it when worse", async () => {
    await createPlan('worse', ['search']);
    const rollback = await automaticRollbackOf(dev, NS, 'worse');
    const done = await waitPlan(dev, NS, rollback.metadata.name, isTerminalPlan, 180_000);
    expect(done.status?.phase).toBe('RolledBack');
    const worse = await waitPlan(dev, NS, 'worse', isTerminalPlan, 60_000);
    const search = appOf(worse, 'search')!;
    expect(search.reason).toBe('VerificationFailed');
    const own = search.verification!.checks.find((c) => c.name === 'vs-previous')!;
    expect(own).toMatchObject({ verdict: 'Failed', condition: '≤ previous + 0.02' });
    // What Prometheus measured for both versions, and the query as sent for the new one.
    const judged = own.samples!.filter((x) => x.value !== undefined && x.baseline !== undefined);
    expect(judged.length).toBeGreaterThan(0);
    for (const x of judged) {
      expect(x.value!).toBeCloseTo(0.04, 2);
      expect(x.baseline!).toBeCloseTo(0.01, 2);
    }
    expect(own.query).toContain('version!="v1.0.0"');
    // The stage's own bound held (4% ≤ 5%): the app's added check is what failed it.
    expect(search.verification!.checks.find((c) => c.name === 'error-rate')?.verdict).not.toBe('Failed');
    expect(await deploymentImage(stable, APPS_NS, 'search')).toContain(stableOld.search);
  });

  it('a bad app fails verification and the controller rolls the whole release back, leaving every app on its previous digest', async () => {
    // In plan order (by name): cart verifies, orders (a fifth of its requests fail) fails, shop never starts.
    await createPlan('bad', ['cart', 'orders', 'shop']);
    // The rollback is quick: wait for its end, then read what each plan recorded.
    const bound = await automaticRollbackOf(dev, NS, 'bad');
    expect(bound.metadata.name).toMatch(/^bad-rollback-[a-z0-9]{5}$/); // generated: nobody could take it beforehand
    const rb = await waitPlan(dev, NS, bound.metadata.name, isTerminalPlan, 180_000);
    const bad = await waitPlan(dev, NS, 'bad', (p: PromotionPlan) => p.status?.phase === 'RolledBack', 60_000);
    // orders failed its check (the reason stays; the phase says it was restored afterwards).
    const orders = appOf(bad, 'orders')!;
    expect(orders).toMatchObject({ phase: 'RolledBack', reason: 'VerificationFailed' });
    expect(orders.message).toMatch(/check error-rate failed \(last value 0\.2\d*, must be ≤ 0\.05\)/);
    expect(orders.verification?.checks[0]).toMatchObject({ verdict: 'Failed', failures: 1 });
    expect(appOf(bad, 'cart')).toMatchObject({ phase: 'RolledBack', reason: 'Verified' });
    expect(appOf(bad, 'shop')).toMatchObject({ phase: 'Failed', reason: 'Halted' });
    expect(appOf(bad, 'shop')?.written).toBeUndefined();
    expect(bad.status?.automaticRollbacks).toEqual([
      expect.objectContaining({
        plan: rb.metadata.name,
        planUID: rb.metadata.uid,
        scope: 'release',
        application: 'orders',
        check: 'error-rate',
      }),
    ]);

    // The rollback plan: created by the controller, run without approval, recorded as caused by the check.
    expect(rb.spec).toMatchObject({ action: 'rollback', rollbackOf: 'bad' });
    expect(rb.spec.approvals ?? []).toEqual([]);
    expect(rb.spec.requestedBy).toBeUndefined();
    expect(rb.metadata.annotations?.['promotions.kpromo.dev/caused-by']).toBe(
      'verification of orders (check error-rate) in plan bad',
    );
    expect(rb.status?.phase).toBe('RolledBack');
    expect((rb.status?.apps ?? []).map((a) => a.application).sort()).toEqual(['cart', 'orders']);
    for (const app of ['cart', 'orders', 'shop'])
      expect(await deploymentImage(stable, APPS_NS, app), app).toContain(stableOld[app]);

    // Told as it happened: Events on the plan, and the release notifications.
    expect(await eventReasons(dev, NS, 'bad')).toEqual(
      expect.arrayContaining(['Verifying', 'AppFailed', 'Halted', 'AutomaticRollback']),
    );
    const sent = await waitFor(
      'notifications',
      async () =>
        hooks.some((h) => h.type === 'PlanRolledBack' && h.data.plan === rb.metadata.name) ? hooks : undefined,
      30_000,
    );
    expect(sent.find((h) => h.type === 'VerificationFailed' && h.data.plan === 'bad')?.data).toMatchObject({
      plan: 'bad',
      application: 'orders',
      message: expect.stringMatching(/check error-rate failed .*\(onFailure: rollbackRelease\)$/),
    });
    expect(sent.filter((h) => h.type === 'PlanRolledBack').map((h) => h.data.plan)).toContain(rb.metadata.name);
  });
});
