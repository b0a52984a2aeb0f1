// Nothing weakens the automatic rollback quietly (issue 48 items 1 and 3), attacked as an insider
// with an ordinary role (create and patch plans, no approve, no rollback) would attack it, on the
// real control plane with the admission policies installed, a real Prometheus judging the release
// and the real controller: a decoy rollback plan does not switch the automatic rollback off, the
// controller's labels cannot be taken off its plans, and a rollback never deploys a digest typed
// into a plan. Each test checks what runs in stable afterwards.
import type { PromotionPlan } from '@kpromo/api';
import { needComponents } from '@kpromo/test-harness';
import {
  applyDeployment,
  appOf,
  automaticRollbackOf,
  callApi,
  createAndApprove,
  deploymentImage,
  getPlan,
  grantRole,
  isTerminalPlan,
  pushTestImage,
  rejection,
  verificationWorld,
  waitPlan,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Running } from '../src/runtime.js';

await needComponents('prometheus');

/** Every app's new version fails a fifth of its requests: each release fails verification. */
const APPS = ['orders', 'ledger'];
const world = verificationWorld('arb', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: APPS,
});
const { ns: NS, appsNs: APPS_NS, repo: REPO, dev, stable, target, base, run, as } = world;
const GROUP = 'promotions.kpromo.dev';
const planPath = (name: string) => `${base}/promotionplans/${name}`;

/** Creates and edits plans; approves nothing, rolls nothing back. */
const mallory = world.user('mallory');
/** Release manager: approves and rolls back. */
const rm = world.user('rita');

let ctl: Running;
let devDigest: Record<string, string> = {};
let stableOld: Record<string, string> = {};

const rollbackBody = (name: string, rollbackOf: string, labels?: Record<string, string>) => ({
  apiVersion: `${GROUP}/v1alpha1`,
  kind: 'PromotionPlan',
  metadata: { name, namespace: NS, ...(labels ? { labels } : {}) },
  spec: { flow: 'main', from: 'dev', to: 'stable', action: 'rollback', rollbackOf, candidates: [] },
});

beforeAll(async () => {
  await world.setUp({
    traffic: (metrics) => {
      for (const app of APPS) metrics.setTraffic(app, 'any', 20, 0.2);
    },
    releaseManagers: [rm],
  });
  ({ devDigest, stableOld } = world);
  await grantRole(
    dev,
    NS,
    'plan-editor',
    [
      {
        apiGroups: [GROUP],
        resources: ['promotionplans'],
        verbs: ['get', 'list', 'watch', 'create', 'patch', 'update'],
      },
      { apiGroups: [GROUP], resources: ['applications', 'environments', 'promotionflows'], verbs: ['get', 'list'] },
    ],
    [mallory],
  );
  ctl = await world.start({}, [rm, mallory]);
}, 300_000);

afterAll(() => world.stop());

describe('automatic rollback, attacked', () => {
  it('decoy rollback plans (one squatting <plan>-rollback, one under another name) do not switch the automatic rollback off: the failed version is gone from stable', async () => {
    // Before the release, the attacker creates rollbacks of it nobody approves.
    await as(mallory).create(`${base}/promotionplans`, rollbackBody('bad-rollback', 'bad'));
    await as(mallory).create(`${base}/promotionplans`, rollbackBody('bad-undo', 'bad'));
    await createAndApprove(
      ctl.port,
      { namespace: NS, from: 'dev', to: 'stable', applications: ['orders'], name: 'bad' },
      rm.token,
    );

    const bound = await automaticRollbackOf(dev, NS, 'bad');
    expect(bound.metadata.name).toMatch(/^bad-rollback-[a-z0-9]{5}$/);
    expect(bound.metadata.labels?.['promotions.kpromo.dev/auto']).toBe('true');
    const rb = await waitPlan(dev, NS, bound.metadata.name, isTerminalPlan, 180_000);
    expect(rb.status?.phase).toBe('RolledBack');
    expect(rb.spec.approvals ?? []).toEqual([]); // automatic: no person approved it
    const bad = await waitPlan(dev, NS, 'bad', (p: PromotionPlan) => p.status?.phase === 'RolledBack', 60_000);
    expect(appOf(bad, 'orders')).toMatchObject({ phase: 'RolledBack', reason: 'VerificationFailed' });
    expect(bad.status?.conditions?.find((c) => c.type === 'RolledBackBy')).toBeUndefined();
    const image = await deploymentImage(stable, APPS_NS, 'orders');
    expect(image).toContain(stableOld.orders);
    expect(image).not.toContain(devDigest.orders);
    // The decoys ran nothing: without approval they never started.
    for (const decoy of ['bad-rollback', 'bad-undo'])
      expect((await getPlan(dev, NS, decoy)).status?.apps?.some((a) => a.written) ?? false, decoy).toBe(false);
  });

  it('removing or changing the controller’s labels on its automatic rollback is refused to anyone but the controller', async () => {
    // The controller's kind of plan (created here as the admin, the controller identity applyCrds installs).
    await dev.create(
      `${base}/promotionplans`,
      rollbackBody('labelled', 'gone', {
        'promotions.kpromo.dev/auto': 'true',
        'promotions.kpromo.dev/rollback-of-uid': '00000000-0000-0000-0000-000000000001',
      }),
    );
    const patches: Array<Record<string, string | null>> = [
      { 'promotions.kpromo.dev/auto': null },
      { 'promotions.kpromo.dev/auto': 'false' },
      { 'promotions.kpromo.dev/rollback-of-uid': '00000000-0000-0000-0000-000000000002' },
      { 'promotions.kpromo.dev/rollback-of-uid': null },
    ];
    for (const labels of patches) {
      const refused = await rejection(as(mallory).mergePatch(planPath('labelled'), { metadata: { labels } }));
      expect(refused.status, JSON.stringify(labels)).toBe(403);
      expect(refused.message).toContain('only the controller labels plans promotions.kpromo.dev/auto');
    }
    // Nor may anyone add them to a plan of theirs.
    await as(mallory).create(`${base}/promotionplans`, rollbackBody('mine', 'gone'));
    const added = await rejection(
      as(mallory).mergePatch(planPath('mine'), {
        metadata: { labels: { 'promotions.kpromo.dev/rollback-of-uid': '00000000-0000-0000-0000-000000000001' } },
      }),
    );
    expect(added.status).toBe(403);
    expect((await getPlan(dev, NS, 'labelled')).metadata.labels).toMatchObject({
      'promotions.kpromo.dev/auto': 'true',
      'promotions.kpromo.dev/rollback-of-uid': '00000000-0000-0000-0000-000000000001',
    });
  });

  it('a digest typed into spec.candidates[].to is never what the automatic rollback deploys (stable pinned by tag only)', async () => {
    // stable runs ledger by tag only: the controller reads no digest from the workload.
    await applyDeployment(stable, APPS_NS, 'ledger', `${target}/stable/${REPO}/ledger:v1.0.0`);
    const evil = (
      await pushTestImage({
        host: target,
        repository: `stable/${REPO}/ledger`,
        tag: 'evil',
        seed: `arb-evil-${run}`,
      })
    ).digest;
    // The attacker writes the plan by hand: the real candidate, and "what runs now" of their choosing.
    await as(mallory).create(`${base}/promotionplans`, {
      apiVersion: `${GROUP}/v1alpha1`,
      kind: 'PromotionPlan',
      metadata: { name: 'typed', namespace: NS },
      spec: {
        flow: 'main',
        from: 'dev',
        to: 'stable',
        candidates: [
          {
            application: 'ledger',
            from: { tag: 'v2.0.0', digest: devDigest.ledger },
            to: { tag: 'v1.0.0', digest: evil },
          },
        ],
      },
    });
    const reviewed = await getPlan(dev, NS, 'typed');
    const approve = await callApi(ctl.port, `/api/v1/plans/${NS}/typed/approve`, {
      method: 'POST',
      token: rm.token,
      body: { uid: reviewed.metadata.uid },
    });
    expect(approve.status, await approve.clone().text()).toBe(200);

    const bound = await automaticRollbackOf(dev, NS, 'typed');
    const rb = await waitPlan(dev, NS, bound.metadata.name, isTerminalPlan, 180_000);
    const typed = await getPlan(dev, NS, 'typed');
    // What the controller recorded as replaced: the digest the target registry names for v1.0.0.
    expect(appOf(typed, 'ledger')?.previous).toEqual({ tag: 'v1.0.0', digest: stableOld.ledger });
    expect(rb.status?.phase).toBe('RolledBack');
    const image = await deploymentImage(stable, APPS_NS, 'ledger');
    expect(image).not.toContain(evil);
    expect(image).toContain(stableOld.ledger);
  });
});
