// Release history and DORA keys end to end on the real control plane and registries: plans run by
// the controller (one app succeeds then is rolled back, one fails), recorded in history ConfigMaps
// that outlive the plans, served by GET /history, GET /insights/dora, /metrics and the MCP `history`
// and `dora` tools, and read only where the caller may list PromotionPlans (RBAC, as the caller).
import type { PromotionPlan } from '@kpromo/api';
import { CONTROLLER_API, type DoraReport, type HistoryEntry, type HistoryList } from '@kpromo/contract';
import { responseChecker } from '@kpromo/contract/testing';
import { waitFor } from '@kpromo/test-harness';
import {
  applyDeployment,
  callApi,
  createAndApprove,
  isTerminalPlan,
  pushTestImage,
  TEST_ADMIN,
  testClusterAccess,
  testTokensFile,
  twoStageWorld,
  waitPlan,
  waitReady,
} from '@kpromo/test-harness/controller';
import { call, httpClient, ok, text } from '@kpromo/test-harness/mcpClient';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HISTORY_LABEL } from '../src/history/segments.js';
import { KPROMO_TYPES, resourcePath } from '../src/kube/paths.js';
import type { Running } from '../src/runtime.js';

const world = twoStageWorld('hist', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: ['web', 'ghost'],
  applications: { owner: () => 'team-web' },
  // The shared stable cluster may be busy (benchmarks): rollouts there get time.
  flow: { rolloutTimeoutSeconds: 600 },
});
const { ns: NS, appsNs: APPS_NS, repo: REPO, run: RUN, dev, source } = world;
const { ns: OTHER } = world.release('other', {
  apps: ['solo'],
  applications: { owner: () => 'team-solo' },
  tags: { new: 'v3.0.0', old: 'v1.0.0' },
});
/** May list PromotionPlans in OTHER only (a RoleBinding there); no system:masters. */
const viewer = world.user('viewer');
/** When the web image was built, as its org.opencontainers.image.created label says. */
const WEB_BUILT = new Date(Date.now() - 3 * 3600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
const GHOST_DIGEST = `sha256:${'9'.repeat(64)}`;
const check = responseChecker(CONTROLLER_API);
let ctl: Running;

async function api<T>(route: string, path: string, token = TEST_ADMIN.token): Promise<{ status: number; body: T }> {
  const r = await callApi(ctl.port, `/api/v1${path}`, { token });
  const body = (await r.json()) as T;
  expect(check('GET', route, r.status, body), `GET ${path} -> ${r.status}`).toEqual([]);
  return { status: r.status, body };
}

async function post<T>(path: string, body: unknown): Promise<T> {
  const r = await callApi(ctl.port, `/api/v1${path}`, { method: 'POST', body });
  expect(r.status, await r.clone().text()).toBe(201);
  return (await r.json()) as T;
}

/** Creates an approved plan dev → stable once the cache has seen the dev workloads (candidates computable). */
async function promote(ns: string): Promise<PromotionPlan> {
  let last = '';
  const created = await waitFor(
    `candidates in ${ns}`,
    async () =>
      createAndApprove(ctl.port, { namespace: ns, from: 'dev', to: 'stable' }).catch((e: Error) => {
        last = e.message;
        expect(last).toContain('no release candidates');
        return undefined;
      }),
    60_000,
  ).catch((e: Error) => {
    throw new Error(`${e.message}: ${last}`);
  });
  return finished(ns, created.metadata.name);
}

const finished = (ns: string, name: string) => waitPlan(dev, ns, name, isTerminalPlan, 600_000);

beforeAll(async () => {
  await world.seed();
  // web's release in dev carries its build time; ghost's digest is in no registry (its copy fails).
  const built = await pushTestImage({
    host: source,
    repository: `${REPO}/web`,
    tag: 'v2.1.0',
    seed: `hist-${RUN}-built`,
    labels: { 'org.opencontainers.image.created': WEB_BUILT },
  });
  await applyDeployment(dev, APPS_NS, 'web', `${source}/${REPO}/web:v2.1.0@${built.digest}`);
  await applyDeployment(dev, APPS_NS, 'ghost', `${source}/${REPO}/ghost:v2.0.1@${GHOST_DIGEST}`);
  for (const app of ['web', 'ghost']) await waitReady(dev, APPS_NS, app);
  await dev.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${OTHER}/roles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'plan-reader' },
    rules: [{ apiGroups: ['promotions.kpromo.dev'], resources: ['promotionplans'], verbs: ['get', 'list', 'watch'] }],
  });
  await dev.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${OTHER}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'plan-reader' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'plan-reader' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: viewer.username }],
  });
  ctl = await world.start({
    namespaces: [NS, OTHER],
    mcp: { enabled: true, host: '127.0.0.1', port: 0, write: false },
    auth: { staticTokensFile: testTokensFile([viewer]), anonymousMetrics: true },
    clusterAccess: testClusterAccess(NS, OTHER),
  });
  await waitFor(
    'cache warm',
    async () =>
      [NS, OTHER].every(
        (ns) =>
          ctl.controller.cache.environments(ns).length === 2 &&
          ctl.controller.cache.environments(ns).every((e) => ctl.controller.cache.environmentSynced(e)),
      ) &&
      ctl.controller.cache.applications(NS).length === 2 &&
      ctl.controller.cache.getApplication(OTHER, 'solo'),
    90_000,
  );
}, 400_000);

afterAll(() => world.stop());

describe('release history', () => {
  let promoted: PromotionPlan;
  let rollback: PromotionPlan;

  it('records a promotion (one app fails), its rollback, and another namespace', async () => {
    promoted = await promote(NS);
    const apps = JSON.stringify(promoted.status?.apps);
    expect(
      promoted.status?.apps?.find((a) => a.application === 'web'),
      apps,
    ).toMatchObject({ phase: 'Succeeded' });
    expect(
      promoted.status?.apps?.find((a) => a.application === 'ghost'),
      apps,
    ).toMatchObject({
      phase: 'Failed',
      reason: 'ImageNotFound',
    });
    rollback = await post<PromotionPlan>(`/plans/${NS}/${promoted.metadata.name}/rollback`, {
      approve: true,
      uid: promoted.metadata.uid,
    });
    rollback = await finished(NS, rollback.metadata.name);
    expect(rollback.status?.phase).toBe('RolledBack');
    expect((await promote(OTHER)).status?.phase).toBe('Complete');
  }, 1_500_000);

  it('keeps every entry in history ConfigMaps, with who, from → to, digests, build time and result', async () => {
    const entries = await waitFor(
      'three entries logged in stable',
      async () => {
        const l = await dev.get<{ items: Array<{ metadata: { name: string }; data?: Record<string, string> }> }>(
          `/api/v1/namespaces/${NS}/configmaps?labelSelector=${HISTORY_LABEL}%3Dtrue`,
        );
        const es = l.items.flatMap((cm) => Object.values(cm.data ?? {}).map((v) => JSON.parse(v) as HistoryEntry));
        return es.length === 3 && es.some((e) => e.result === 'RolledBack') ? es : undefined;
      },
      60_000,
    );
    const web = entries.find((e) => e.application === 'web' && e.action === 'promote')!;
    const webApp = promoted.status!.apps!.find((a) => a.application === 'web')!;
    expect(web).toMatchObject({
      namespace: NS,
      flow: 'main',
      environment: 'stable',
      team: 'team-web',
      approvedBy: [TEST_ADMIN.username],
      requestedBy: TEST_ADMIN.username,
      to: { tag: webApp.targetTag, digest: webApp.digest },
      from: webApp.previous,
      result: 'RolledBack',
      deployed: true,
      imageCreatedAt: WEB_BUILT,
      plan: promoted.metadata.name,
    });
    expect(web.durationSeconds).toBeGreaterThanOrEqual(0);
    expect(entries.find((e) => e.application === 'ghost')).toMatchObject({
      result: 'Failed',
      reason: 'ImageNotFound',
      deployed: false,
    });
    expect(entries.find((e) => e.action === 'rollback')).toMatchObject({
      application: 'web',
      result: 'Succeeded',
      rollbackOf: promoted.metadata.name,
      to: { digest: webApp.previous?.digest },
    });
  });

  it('serves GET /history newest first and paged, and still after the plans are deleted', async () => {
    const first = await api<HistoryList>('/history', `/history?namespace=${NS}&environment=stable&since=1d&limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.total).toBe(3);
    expect(first.body.items[0]).toMatchObject({ action: 'rollback', application: 'web' });
    const rest = await api<HistoryList>('/history', `/history?namespace=${NS}&limit=2&continue=${first.body.continue}`);
    expect([...first.body.items, ...rest.body.items].map((e) => e.key).sort()).toHaveLength(3);
    expect(rest.body.continue).toBeUndefined();

    for (const p of [rollback, promoted])
      await dev.delete(resourcePath(KPROMO_TYPES.PromotionPlan, NS, p.metadata.name));
    await waitFor('plans gone from the cache', async () => ctl.controller.cache.plans(NS).length === 0, 30_000);
    const after = await api<HistoryList>('/history', `/history?namespace=${NS}&application=web`);
    expect(after.body.items.map((e) => [e.action, e.result, e.source])).toEqual([
      ['rollback', 'Succeeded', 'log'],
      ['promote', 'RolledBack', 'log'],
    ]);
  });

  it('computes the DORA keys from that history: API, MCP and /metrics agree', async () => {
    const { body: dora } = await api<DoraReport>('/insights/dora', `/insights/dora?namespace=${NS}&window=1d`);
    const web = (await api<HistoryList>('/history', `/history?namespace=${NS}&application=web`)).body.items.find(
      (e) => e.action === 'promote',
    )!;
    const back = (await api<HistoryList>('/history', `/history?namespace=${NS}&application=web`)).body.items.find(
      (e) => e.action === 'rollback',
    )!;
    const lead = (Date.parse(web.finishedAt) - Date.parse(WEB_BUILT)) / 1000;
    const restore = (Date.parse(back.finishedAt) - Date.parse(web.finishedAt)) / 1000;
    expect(dora.total).toEqual({
      deployments: 2,
      deploymentFrequency: { perDay: 1, count: 1 },
      leadTime: { medianSeconds: lead, samples: 1, unknown: 0 },
      changeFailureRate: { ratio: 1, failures: 2 },
      timeToRestore: { medianSeconds: restore, samples: 1, unrestored: 1 },
    });
    expect(dora.groups.map((g) => [g.namespace, g.flow, g.team, g.environment])).toEqual([
      [NS, 'main', 'team-web', 'stable'],
    ]);

    const mcp = await httpClient(ctl.mcp!.url, TEST_ADMIN.token);
    try {
      const h = await call(mcp, 'history', { namespace: NS, environment: 'stable', since: '1d' });
      expect(ok<{ total: number }>(h).total).toBe(3);
      expect(text(h)).toMatch(/stable web rollback to .*: Succeeded/);
      const d = ok<DoraReport>(await call(mcp, 'dora', { namespace: NS, windowDays: 1 }));
      expect(d.total).toEqual(dora.total);
    } finally {
      await mcp.close();
    }

    const metrics = await (await fetch(`http://127.0.0.1:${ctl.port}/metrics`)).text();
    const labels = `namespace="${NS}",flow="main",team="team-web",environment="stable"`;
    const sample = (name: string) =>
      metrics.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`namespace="${NS}"`));
    expect(sample('kpromo_dora_change_failure_ratio')).toBe(`kpromo_dora_change_failure_ratio{${labels}} 1`);
    expect(sample('kpromo_dora_lead_time_seconds')).toBe(`kpromo_dora_lead_time_seconds{${labels}} ${lead}`);
    expect(metrics).toMatch(
      new RegExp(`kpromo_deployments_total\\{[^}]*namespace="${NS}"[^}]*result="Failed"[^}]*\\} 1`),
    );
  });

  it('shows a restricted user only the namespaces where RBAC lets them list plans', async () => {
    const mine = await api<HistoryList>('/history', '/history', viewer.token);
    expect(mine.status).toBe(200);
    expect(new Set(mine.body.items.map((e) => e.namespace))).toEqual(new Set([OTHER]));
    expect(mine.body.items.map((e) => [e.application, e.result])).toEqual([['solo', 'Succeeded']]);
    const denied = await callApi(ctl.port, `/api/v1/history?namespace=${NS}`, { token: viewer.token });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { error: string }).error).toContain(
      `may not list promotionplans in namespace ${NS}`,
    );
    const dora = await api<DoraReport>('/insights/dora', '/insights/dora', viewer.token);
    expect(dora.body.groups.map((g) => g.namespace)).toEqual([OTHER]);

    const mcp = await httpClient(ctl.mcp!.url, viewer.token);
    try {
      const refused = await call(mcp, 'history', { namespace: NS });
      expect(refused.isError).toBe(true);
      expect(text(refused)).toContain('forbidden');
    } finally {
      await mcp.close();
    }
  });
});
