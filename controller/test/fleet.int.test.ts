import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PromotionPlan, WaveProgress } from '@kpromo/api';
import { applyCrds, cleanClusters, ensureClusters, freePortBlock, kubeConfigFor } from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  approveAsAdmin,
  automaticRollbackOf,
  callApi,
  controllerConfig,
  crs,
  deploymentImage,
  ensureNs,
  getPlan,
  grantRole,
  isTerminalPlan,
  pushTestImage,
  rejection,
  restFor,
  waitPlan,
  waitReady,
} from '@kpromo/test-harness/controller';
import { modernClient } from '@kpromo/test-harness/mcpClient';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ControllerOptions } from '../src/controller.js';
import { KPROMO_TYPES, resourcePath } from '../src/kube/paths.js';
import { createLogger } from '../src/observability/logger.js';
import { type Running, startController } from '../src/runtime.js';

/**
 * Fleets on a private control plane of seven real clusters (kube-apiserver, controller-manager,
 * scheduler and kwok each, one etcd): `src` is the control cluster and the source stage, `prod-1`
 * … `prod-6` are the clusters of the one fleet Environment `prod`. The controller, the admission
 * policies and RBAC are the real ones.
 */
const PROD = ['prod-1', 'prod-2', 'prod-3', 'prod-4', 'prod-5', 'prod-6'];
const NS = 'fleet';
const APPS = 'fleet-apps';
const { source, target } = inject('registries');
const log = createLogger({ level: process.env.CTL_TEST_LOG ?? 'silent' });

const stateDir = mkdtempSync(join(tmpdir(), 'kpromo-fleet-'));
let opts: { stateDir: string; clusters: string[]; basePort: number };
let kubeconfig: string;
let ctl: Running;
const copies: string[] = [];
const rest = (ctx: string) => restFor(kubeconfig, ctx);
const MALLORY = { token: 'fleet-mallory-0123456789abcdef', username: 'mallory', groups: ['system:authenticated'] };
const ALICE = { token: 'fleet-alice-0123456789abcdef01', username: 'alice', groups: ['system:authenticated'] };
const srcDigest: Record<string, string> = {};
const oldDigest: Record<string, string> = {};

const waveOf = (p: PromotionPlan, name: string) => p.status?.waves?.find((w) => w.name === name) as WaveProgress;
const phases = (p: PromotionPlan) => Object.fromEntries((p.status?.waves ?? []).map((w) => [w.name, w.phase]));
const runs = async (cluster: string, app: string, ns = APPS) => (await deploymentImage(rest(cluster), ns, app)) ?? '';
const postPlan = async (body: Record<string, unknown>) => {
  const res = await callApi(ctl.port, '/api/v1/plans', { method: 'POST', body: { namespace: NS, ...body } });
  const json = (await res.json()) as { plan: PromotionPlan };
  if (res.status !== 201) throw new Error(`POST /plans answered ${res.status}: ${JSON.stringify(json)}`);
  return json.plan;
};

/** The fleet Environment: six clusters, two labelled region eu; delivery inherited (patch). */
const prodEnv = (extra: object[] = []) => ({
  kind: 'Environment',
  metadata: { name: 'prod', namespace: NS },
  spec: {
    tier: 'production',
    namespace: APPS,
    registry: { host: target, prefix: 'fleet-prod', insecure: true },
    delivery: { method: 'patch' },
    clusters: [
      ...PROD.map((c) => ({
        name: c,
        cluster: { context: c },
        ...(c === 'prod-2' || c === 'prod-3' ? { labels: { region: 'eu' } } : { labels: { region: 'us' } }),
      })),
      ...extra,
    ],
  },
});

beforeAll(async () => {
  opts = { stateDir, clusters: ['src', ...PROD], basePort: await freePortBlock(7) };
  kubeconfig = (await ensureClusters(opts)).kubeconfigPath;
  await applyCrds(kubeConfigFor('src', kubeconfig));
  for (const c of ['src', ...PROD]) await ensureNs(rest(c), APPS);
  await ensureNs(rest('src'), NS);
  await ensureNs(rest('prod-6'), 'fleet-extra');

  for (const app of ['web', 'api', 'bad', 'cart']) {
    srcDigest[app] = (
      await pushTestImage({
        host: source,
        repository: `fleet-src/shop/${app}`,
        tag: 'v2.0.0',
        seed: `fleet-new-${app}`,
      })
    ).digest;
    oldDigest[app] = (
      await pushTestImage({
        host: target,
        repository: `fleet-prod/shop/${app}`,
        tag: 'v1.0.0',
        seed: `fleet-old-${app}`,
      })
    ).digest;
    await applyDeployment(rest('src'), APPS, app, `${source}/fleet-src/shop/${app}:v2.0.0@${srcDigest[app]}`);
    for (const c of PROD)
      await applyDeployment(rest(c), APPS, app, `${target}/fleet-prod/shop/${app}:v1.0.0@${oldDigest[app]}`, {
        // bad never runs in prod-1 and cart never in prod-3: their rollouts there time out.
        stuck: (app === 'bad' && c === 'prod-1') || (app === 'cart' && c === 'prod-3'),
      });
  }
  // A seventh cluster entry added mid-plan: prod-6's apiserver, another namespace.
  await applyDeployment(rest('prod-6'), 'fleet-extra', 'web', `${target}/fleet-prod/shop/web:v1.0.0@${oldDigest.web}`);
  for (const app of ['web', 'api', 'bad', 'cart']) await waitReady(rest('src'), APPS, app);

  await applyCr(rest('src'), {
    kind: 'Environment',
    metadata: { name: 'src', namespace: NS },
    spec: {
      cluster: { context: 'src' },
      namespace: APPS,
      registry: { host: source, prefix: 'fleet-src', insecure: true },
      delivery: { method: 'patch' },
    },
  });
  await applyCr(rest('src'), prodEnv());
  for (const app of ['web', 'api', 'bad', 'cart']) await applyCr(rest('src'), crs.application(NS, app, 'team-shop'));
  // Canary first and a person continues; then eu by label; the rest join the last wave.
  await applyCr(
    rest('src'),
    crs.flow(NS, 'fleet', ['src', 'prod'], {
      selector: { applications: ['web', 'api', 'bad'] },
      rolloutTimeoutSeconds: 20,
      stages: [
        { environment: 'src' },
        {
          environment: 'prod',
          waves: [
            { name: 'canary', clusters: ['prod-1'], pause: true },
            { name: 'eu', selector: { matchLabels: { region: 'eu' } } },
            { name: 'rest' },
          ],
        },
      ],
    }),
  );
  // Two clusters, then the rest; a failed wave rolls back every cluster already promoted.
  await applyCr(
    rest('src'),
    crs.flow(NS, 'fleet-rb', ['src', 'prod'], {
      selector: { applications: ['cart'] },
      rolloutTimeoutSeconds: 15,
      stages: [
        { environment: 'src' },
        {
          environment: 'prod',
          onWaveFailure: 'rollback',
          waves: [
            { name: 'first', clusters: ['prod-1', 'prod-2'] },
            { name: 'second', clusters: ['prod-3', 'prod-4'] },
          ],
        },
      ],
    }),
  );
  const cfg = controllerConfig(
    kubeconfig,
    NS,
    { context: 'src', maxAttempts: 2, mcp: { enabled: true, host: '127.0.0.1', port: 0, write: true } },
    [MALLORY, ALICE],
  );
  ctl = await startController(cfg, {
    log,
    customize: (o: ControllerOptions) => ({
      ...o,
      copyImage: async (req) => {
        copies.push(`${req.target.repository}:${req.target.tag}`);
        return o.copyImage(req);
      },
    }),
  });
}, 300_000);

afterAll(async () => {
  await ctl?.stop();
  if (opts) await cleanClusters(opts);
}, 120_000);

describe('a fleet stage promoted in waves (seven real clusters)', () => {
  let planA: PromotionPlan;

  it('promotes the canary wave first, copies each image once, and waits for a person to continue', async () => {
    planA = await postPlan({ flow: 'fleet', from: 'src', to: 'prod', name: 'release-a', applications: ['web', 'api'] });
    expect(planA.spec.candidates.map((c) => c.application).sort()).toEqual(['api', 'web']);
    await approveAsAdmin(rest('src'), NS, 'release-a');
    const waiting = await waitPlan(rest('src'), NS, 'release-a', (p) => waveOf(p, 'eu')?.phase === 'Waiting');
    expect(phases(waiting)).toEqual({ canary: 'Succeeded', eu: 'Waiting', rest: 'Pending' });
    expect(waveOf(waiting, 'canary').clusters).toEqual(['prod-1']);
    expect(waveOf(waiting, 'eu').clusters).toEqual(['prod-2', 'prod-3']);
    expect(waveOf(waiting, 'rest').clusters).toEqual(['prod-4', 'prod-5', 'prod-6']);
    expect(waveOf(waiting, 'eu').message).toContain('kpromo plan continue release-a --wave eu');
    for (const app of ['web', 'api']) {
      expect(await runs('prod-1', app)).toContain(`@${srcDigest[app]}`);
      for (const c of PROD.slice(1)) expect(await runs(c, app)).toContain(`@${oldDigest[app]}`);
    }
    // The per-cluster journal and the sum-up per app.
    expect(waiting.status?.targets?.map((t) => [t.cluster, t.wave])).toEqual([
      ['prod-1', 'canary'],
      ['prod-2', 'eu'],
      ['prod-3', 'eu'],
      ['prod-4', 'rest'],
      ['prod-5', 'rest'],
      ['prod-6', 'rest'],
    ]);
    const web = waiting.status?.apps?.find((a) => a.application === 'web');
    expect(web).toMatchObject({ phase: 'RollingOut', digest: srcDigest.web, copied: true, written: true });
    expect(web?.message).toContain('1/6 cluster(s) succeeded');
    expect(copies.filter((c) => c.startsWith('fleet-prod/shop/web:'))).toHaveLength(1);
  }, 120_000);

  it('refuses to continue a wave for a user without the continue verb (API, kubectl, MCP), and accepts one who holds it (MCP)', async () => {
    const src = rest('src');
    const mallory = { username: 'mallory', groups: ['system:authenticated'] };
    const alice = { username: 'alice', groups: ['system:authenticated'] };
    const rw = { apiGroups: ['promotions.kpromo.dev'], resources: ['promotionplans'], verbs: ['get', 'patch'] };
    await grantRole(
      src,
      NS,
      'plan-editors',
      [rw],
      [
        { ...mallory, token: '' },
        { ...alice, token: '' },
      ],
    );
    await grantRole(
      src,
      NS,
      'prod-continuers',
      [
        {
          apiGroups: ['promotions.kpromo.dev'],
          resources: ['environments'],
          resourceNames: ['prod'],
          verbs: ['continue'],
        },
      ],
      [{ ...alice, token: '' }],
    );
    const path = resourcePath(KPROMO_TYPES.PromotionPlan, NS, 'release-a');
    const uid = planA.metadata.uid;
    // Through the controller's API: the same check as the caller, before any write.
    const viaApi = await callApi(ctl.port, `/api/v1/plans/${NS}/release-a/continue`, {
      method: 'POST',
      body: { wave: 'eu' },
      token: MALLORY.token,
    });
    expect(viaApi.status).toBe(403);
    expect(((await viaApi.json()) as { error: string }).error).toContain(
      'may not continue plans into environment prod',
    );
    const refused = await rejection(
      src
        .as(mallory)
        .jsonPatch(path, [
          { op: 'add', path: '/spec/continuations', value: [{ wave: 'eu', user: 'mallory', planUID: uid }] },
        ]),
    );
    expect(refused.status).toBe(403);
    expect(refused.message).toContain('may not continue the waves of plans into environment prod');
    const forged = await rejection(
      src
        .as(alice)
        .jsonPatch(path, [
          { op: 'add', path: '/spec/continuations', value: [{ wave: 'eu', user: 'bob', planUID: uid }] },
        ]),
    );
    expect(forged.message).toContain('a continuation must name the requesting user alice');
    // Through MCP (the door an agent uses): refused before anyone is asked to confirm; alice, once
    // confirmed, continues as herself, and admission accepts her continuation.
    const asked: string[] = [];
    const malloryMcp = await modernClient(ctl.mcp!.url, MALLORY.token, { elicit: 'accept' });
    malloryMcp.setRequestHandler('elicitation/create', async (req) => {
      asked.push(req.params.message);
      return { action: 'accept', content: { confirm: true } };
    });
    const viaMcp = await malloryMcp.callTool({
      name: 'continue_wave',
      arguments: { namespace: NS, plan: 'release-a' },
    });
    expect(viaMcp.isError).toBe(true);
    expect((viaMcp.content as Array<{ text: string }>)[0].text).toContain(
      'may not continue plans into environment prod',
    );
    expect(asked).toEqual([]);
    await malloryMcp.close();
    expect((await getPlan(src, NS, 'release-a')).spec.continuations).toBeUndefined();
    const aliceMcp = await modernClient(ctl.mcp!.url, ALICE.token, { elicit: 'accept' });
    const continued = await aliceMcp.callTool({
      name: 'continue_wave',
      arguments: { namespace: NS, plan: 'release-a', uid },
    });
    await aliceMcp.close();
    expect(continued.isError, JSON.stringify(continued.content)).toBeFalsy();
    expect((continued.structuredContent as { wave: string }).wave).toBe('eu');
    expect((await getPlan(src, NS, 'release-a')).spec.continuations).toEqual([
      expect.objectContaining({ wave: 'eu', user: 'alice', planUID: uid }),
    ]);
    const eu = await waitPlan(src, NS, 'release-a', (p) => waveOf(p, 'eu')?.phase !== 'Waiting');
    expect(waveOf(eu, 'eu').continuedBy).toBe('alice');
  }, 60_000);

  it('leaves a cluster added to the Environment mid-plan to the next plan, which the candidates show as drift', async () => {
    await applyCr(rest('src'), prodEnv([{ name: 'prod-7', cluster: { context: 'prod-6' }, namespace: 'fleet-extra' }]));
    try {
      await checkAddedClusterLeftAlone();
    } finally {
      await applyCr(rest('src'), prodEnv());
    }
  }, 180_000);

  async function checkAddedClusterLeftAlone() {
    const done = await waitPlan(rest('src'), NS, 'release-a', (p) => p.status?.phase === 'Complete', 120_000);
    expect(phases(done)).toEqual({ canary: 'Succeeded', eu: 'Succeeded', rest: 'Succeeded' });
    // Each wave started only after the one before it finished.
    const [canary, eu, restWave] = done.status!.waves!;
    expect(Date.parse(eu.startedAt!)).toBeGreaterThanOrEqual(Date.parse(canary.finishedAt!));
    expect(Date.parse(restWave.startedAt!)).toBeGreaterThanOrEqual(Date.parse(eu.finishedAt!));
    expect(done.status?.targets?.map((t) => t.cluster)).toEqual(PROD);
    // Status lists are atomic: its field ownership (stored with the object, in etcd) does not list
    // every cluster and app, which at 20 clusters x 200 apps was as large as the status itself.
    const owned = JSON.stringify((done.metadata as { managedFields?: unknown[] }).managedFields ?? []);
    expect(owned).toContain('f:targets');
    expect(owned).not.toContain('k:{\\"cluster\\"');
    expect(done.status?.apps?.map((a) => a.phase)).toEqual(['Succeeded', 'Succeeded']);
    for (const app of ['web', 'api']) for (const c of PROD) expect(await runs(c, app)).toContain(`@${srcDigest[app]}`);
    expect(await runs('prod-6', 'web', 'fleet-extra')).toContain(`@${oldDigest.web}`);
    expect(copies.filter((c) => c.startsWith('fleet-prod/shop/web:'))).toHaveLength(1);
    expect(copies.filter((c) => c.startsWith('fleet-prod/shop/api:'))).toHaveLength(1);

    const diff = (await (
      await callApi(ctl.port, `/api/v1/diff?namespace=${NS}&flow=fleet&from=src&to=prod`)
    ).json()) as { candidates: Array<{ application: string; to?: { digest?: string } }> };
    const web = diff.candidates.find((c) => c.application === 'web');
    // Six clusters run the new digest, prod-7 the old one: still a candidate.
    expect(web?.to?.digest).toBe(srcDigest.web);
    expect(diff.candidates.find((c) => c.application === 'api')).toBeUndefined();
  }

  it('halts the later waves when an app fails in the first wave', async () => {
    await postPlan({ flow: 'fleet', from: 'src', to: 'prod', name: 'release-bad', applications: ['bad'] });
    await approveAsAdmin(rest('src'), NS, 'release-bad');
    const p = await waitPlan(rest('src'), NS, 'release-bad', (x) => x.status?.phase === 'Failed', 120_000);
    expect(phases(p)).toEqual({ canary: 'Failed', eu: 'Halted', rest: 'Halted' });
    expect(waveOf(p, 'canary').message).toContain('1 of 1 cluster(s) failed');
    const bad = p.status?.apps?.find((a) => a.application === 'bad');
    expect(bad?.phase).toBe('Failed');
    expect(p.status?.targets?.find((t) => t.cluster === 'prod-1')?.apps[0]).toMatchObject({
      phase: 'Failed',
      reason: 'RolloutTimeout',
    });
    for (const c of PROD.slice(1)) {
      expect(p.status?.targets?.find((t) => t.cluster === c)?.apps[0].phase).toBe('Pending');
      expect(await runs(c, 'bad')).toContain(`@${oldDigest.bad}`);
    }
  }, 150_000);

  it('rolls back every cluster already promoted when a later wave fails (onWaveFailure: rollback)', async () => {
    await postPlan({ flow: 'fleet-rb', from: 'src', to: 'prod', name: 'release-cart', applications: ['cart'] });
    await approveAsAdmin(rest('src'), NS, 'release-cart');
    const p = await waitPlan(rest('src'), NS, 'release-cart', (x) => x.status?.phase === 'Failed', 120_000);
    expect(phases(p)).toEqual({ first: 'Succeeded', second: 'Failed' });
    // prod-5 and prod-6 were selected by no wave: they joined the last one.
    expect(waveOf(p, 'second').clusters).toEqual(['prod-3', 'prod-4', 'prod-5', 'prod-6']);
    expect(p.status?.automaticRollbacks?.[0]).toMatchObject({
      plan: expect.stringMatching(/^release-cart-rollback-/),
      check: 'wave second',
    });
    const bound = await automaticRollbackOf(rest('src'), NS, 'release-cart');
    const rb = await waitPlan(rest('src'), NS, bound.metadata.name, (x) => isTerminalPlan(x), 120_000);
    // prod-3 cannot roll out the previous version either (stuck): the rollback is Incomplete.
    expect(rb.status?.phase, JSON.stringify(rb.status?.waves)).toBe('Incomplete');
    expect(rb.spec).toMatchObject({ action: 'rollback', rollbackOf: 'release-cart' });
    const restored = rb.status?.targets
      ?.filter((t) => t.apps.every((a) => a.phase === 'Succeeded'))
      .map((t) => t.cluster);
    // Every cluster whose Deployment kpromo changed is restored; prod-3 never rolls out (stuck).
    expect(restored).toEqual(expect.arrayContaining(['prod-1', 'prod-2', 'prod-4', 'prod-5', 'prod-6']));
    for (const c of ['prod-1', 'prod-2', 'prod-4', 'prod-5', 'prod-6'])
      expect(await runs(c, 'cart')).toContain(`@${oldDigest.cart}`);
  }, 240_000);
});
