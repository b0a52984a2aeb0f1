import { createServer, type Server } from 'node:http';
import type { Environment, PromotionPlan, PromotionPlanStatus } from '@kpromo/api';
import { applyCrds, freePort, kubeConfigFor, needComponents, waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  applyHelmRelease,
  callApi,
  controllerConfig,
  crs,
  deleteHelmReleaseCrd,
  deleteNamespaces,
  deploymentImage,
  ensureHelmReleaseCrd,
  getPlan,
  HELMRELEASE_CRD,
  playHelmController,
  pushTestImage,
  registryDigest,
  restFor,
  runNamespaces,
  setupNamespaces,
  isTerminalPlan as terminal,
  waitPlan,
  waitReady,
  withShown,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HELMRELEASE, KPROMO_TYPES, resourcePath } from '../src/kube/paths.js';
import { isConflict } from '../src/kube/rest.js';
import { verifyWebhookSignature } from '../src/notify/signWebhook.js';
import { createLogger } from '../src/observability/logger.js';
import { StatusConflictError, StatusWriter } from '../src/reconcile/statusWriter.js';
import { type Running, startController } from '../src/runtime.js';

// Built before this file's hooks run (in the background on a fresh machine): test/cluster/need.ts.
await needComponents('helm', 'flux-crds');

const names = runNamespaces('ctl-dlv');
const { ns: NS, apps: APPS } = names;
const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const prod = restFor(kubeconfig, 'prod');
const stable = restFor(kubeconfig, 'stable');
const hookSecret = 's3cr3t';
const hooks: Array<{ headers: Record<string, string | string[] | undefined>; body: string }> = [];
let hookServer: Server;
let ctl: Running;
/** Controller log lines (warn and up): webhook failures are checked there, and for leaked secrets. */
const logLines: string[] = [];
/** Requests the controller's own API received on the path a Notification aims at it (must stay 0). */
let selfProbeRequests = 0;
let createdCrd = false;
const digests: Record<string, string> = {};
type HelmStatus = {
  conditions: Array<{ type: string; status: string; observedGeneration: number }>;
  history: Array<{ status: string }>;
};

/**
 * helm-controller is not run here (only its CRD schema is real): the test plays it with
 * playHelmController (@kpromo/test-harness/controller), which releases the HelmRelease web and fails every upgrade of api.
 */
const releaseWeb = () => playHelmController(prod, APPS, 'web', { released: true }).then(() => undefined);
const UPGRADE_ERROR = 'context deadline exceeded';

beforeAll(async () => {
  // This file's Notification uses webhook.headersSecretRef: the served CRDs must know the field.
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  // The real HelmRelease CRD (generated from helm-controller's api module): kpromo's patches are validated by it.
  createdCrd = await ensureHelmReleaseCrd(prod);
  // stable gets the CRD only after the controller started (detected without a restart).
  if (await stable.getOrUndefined(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${HELMRELEASE_CRD}`)) {
    await deleteHelmReleaseCrd(stable);
    await waitFor(
      'no HelmRelease CRD in stable',
      async () => !(await stable.getOrUndefined('/apis/helm.toolkit.fluxcd.io/v2')),
    );
  }
  await setupNamespaces(dev, [dev, prod, stable], names);

  for (const app of ['web', 'api']) {
    digests[app] = (
      await pushTestImage({
        host: source,
        repository: `shop/${app}`,
        tag: 'v2.0.0',
        seed: `dlv-${app}`,
        multiArch: app === 'web',
      })
    ).digest;
    await applyDeployment(dev, APPS, app, `${source}/shop/${app}:v2.0.0@${digests[app]}`);
  }
  await applyDeployment(prod, APPS, 'web', `${target}/helm/shop/web:v1.0.0`);
  await applyDeployment(prod, APPS, 'api', `${target}/helm/shop/api:v1.0.0`);
  await waitWorkloads();
  await applyHelmRelease(prod, APPS, 'web', {
    replicas: 1,
    image: { repository: `${target}/helm/shop/web`, tag: 'v1.0.0' },
  });
  await applyHelmRelease(prod, APPS, 'api', { image: { repository: `${target}/helm/shop/api`, tag: 'v1.0.0' } });
  // Both installed by "helm-controller" before kpromo promotes anything.
  for (const app of ['web', 'api']) await playHelmController(prod, APPS, app, { released: true });

  const port = await freePort();
  hookServer = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      hooks.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  }).listen(port, '127.0.0.1');
  const downPort = await freePort(); // nothing listens here: a registry that is down

  await dev.apply(
    `/api/v1/namespaces/${NS}/secrets/hook`,
    {
      apiVersion: 'v1',
      kind: 'Secret',
      // Opted in as a credential for the receiver only (credentialPolicy.ts).
      metadata: {
        name: 'hook',
        namespace: NS,
        labels: { 'promotions.kpromo.dev/credential': 'true' },
        annotations: { 'promotions.kpromo.dev/destinations': `http://127.0.0.1:${port}/hook` },
      },
      stringData: { secret: hookSecret },
    },
    'ctl-test',
  );
  await dev.apply(
    `/api/v1/namespaces/${NS}/secrets/hook-headers`,
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'hook-headers',
        namespace: NS,
        labels: { 'promotions.kpromo.dev/credential': 'true' },
        annotations: { 'promotions.kpromo.dev/destinations': `http://127.0.0.1:${port}/` },
      },
      stringData: { authorization: 'Bearer int-test-token' },
    },
    'ctl-test',
  );
  const env = (name: string, registry: object, delivery: object, context = name === 'dev' ? 'dev' : 'prod') =>
    crs.environment(NS, name, { context, namespace: APPS, registry, delivery });
  await applyCr(dev, env('dev', { host: source, insecure: true }, { method: 'patch' }));
  await applyCr(
    dev,
    env(
      'helm',
      { host: target, prefix: 'helm', insecure: true },
      { method: 'helmRelease', helmRelease: { name: '{app}', valuesPath: 'image.tag', digestPath: 'image.digest' } },
    ),
  );
  await applyCr(dev, env('down', { host: `127.0.0.1:${downPort}`, insecure: true }, { method: 'patch' }));
  await applyCr(
    dev,
    env(
      'helmfail',
      { host: target, prefix: 'helmfail', insecure: true },
      { method: 'helmRelease', helmRelease: { valuesPath: 'image.tag', digestPath: 'image.digest' } },
    ),
  );
  await applyCr(
    dev,
    env('late', { host: target, prefix: 'late', insecure: true }, { method: 'helmRelease', helmRelease: {} }, 'stable'),
  );
  await applyCr(
    dev,
    crs.flow(NS, 'helm', ['dev', 'helm'], {
      selector: { applications: ['web'] },
      tagTemplate: 'rel-{version}-{shortDigest}',
    }),
  );
  await applyCr(dev, crs.flow(NS, 'down', ['dev', 'down'], { selector: { applications: ['api'] } }));
  await applyCr(dev, crs.flow(NS, 'helmfail', ['dev', 'helmfail'], { selector: { applications: ['api'] } }));
  for (const app of ['web', 'api']) await applyCr(dev, crs.application(NS, app, 'team-b'));
  await applyCr(dev, {
    kind: 'Notification',
    metadata: { name: 'hook', namespace: NS },
    spec: {
      events: ['PlanApproved', 'AppPromoted', 'AppFailed', 'PlanComplete', 'PlanIncomplete'],
      flows: ['helm', 'down'],
      webhook: {
        url: `http://127.0.0.1:${port}/hook`,
        secretRef: { name: 'hook' },
        headersSecretRef: { name: 'hook-headers' },
        maxAttempts: 2,
      },
    },
  });

  // The hook receiver is on loopback, which the egress policy refuses unless allowed.
  const cfg = controllerConfig(kubeconfig, NS, {
    leaderElection: { enabled: false },
    maxAttempts: 2,
    egress: { allowedCidrs: ['127.0.0.1/32'] },
  });
  const log = createLogger({
    level: process.env.CTL_TEST_LOG ?? 'warn',
    destination: {
      write: (line: string) => {
        logLines.push(line);
        if (process.env.CTL_TEST_LOG) process.stdout.write(line);
      },
    },
  });
  ctl = await startController(cfg, { log });
  ctl.server?.on('request', (req) => {
    if (req.url?.startsWith('/api/v1/ssrf-probe')) selfProbeRequests++;
  });
  // A Notification aimed at the controller's own API (loopback is allowed, its own port never is).
  await applyCr(dev, {
    kind: 'Notification',
    metadata: { name: 'self', namespace: NS },
    spec: {
      events: ['PlanApproved', 'PlanComplete'],
      flows: ['helm'],
      webhook: { url: `http://127.0.0.1:${ctl.port}/api/v1/ssrf-probe?token=int-leak`, maxAttempts: 2 },
    },
  });
  await waitFor('Notification self in the cache', async () =>
    ctl.controller.cache.notifications(NS).some((n) => n.metadata.name === 'self'),
  );
});

async function waitWorkloads() {
  for (const app of ['web', 'api']) await waitReady(dev, APPS, app);
}

afterAll(async () => {
  await ctl?.stop();
  hookServer?.close();
  await deleteNamespaces(dev, [dev, prod, stable], names);
  if (createdCrd) await deleteHelmReleaseCrd(prod);
  await deleteHelmReleaseCrd(stable);
});

const post = (path: string, body: unknown) => callApi(ctl.port, path, { method: 'POST', body });

describe('delivery methods and failure modes', () => {
  it('promotes a multi-arch image through a Flux HelmRelease and notifies a signed webhook', async () => {
    const r = await post(
      '/api/v1/plans',
      await withShown(ctl.port, {
        namespace: NS,
        flow: 'helm',
        from: 'dev',
        to: 'helm',
        name: 'helm-plan',
        approve: true,
      }),
    );
    expect(r.status).toBe(201);
    const p = await waitPlan(dev, NS, 'helm-plan', terminal, 90_000, releaseWeb);
    expect(p.status?.phase).toBe('Complete');
    const a = p.status!.apps![0];
    expect(a.targetTag).toBe(`rel-v2.0.0-${digests.web.slice(7, 19)}`);
    expect(await registryDigest(target, 'helm/shop/web', a.targetTag!)).toBe(digests.web);
    const hr = await prod.get<{ spec: { values: { replicas: number; image: Record<string, string> } } }>(
      resourcePath(HELMRELEASE, APPS, 'web'),
    );
    expect(hr.spec.values).toEqual({
      replicas: 1,
      image: { repository: `${target}/helm/shop/web`, tag: a.targetTag, digest: digests.web },
    });
    expect(a.previous).toEqual({ tag: 'v1.0.0' });
    // The real schema accepted kpromo's patch, and the verdict was read from the release status.
    const st = await prod.get<{ metadata: { generation: number }; status: HelmStatus }>(
      resourcePath(HELMRELEASE, APPS, 'web'),
    );
    expect(st.metadata.generation).toBe(2);
    expect(st.status.conditions.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      observedGeneration: 2,
    });
    expect(st.status.history.map((h) => h.status)).toEqual(['deployed', 'superseded']);
    expect(await deploymentImage(prod, APPS, 'web')).toBe(`${target}/helm/shop/web:${a.targetTag}@${digests.web}`);

    const types = await waitFor('webhooks', async () => {
      const t = hooks.map((h) => h.headers['x-kpromo-event']);
      return t.includes('PlanComplete') ? t : undefined;
    });
    expect(types).toEqual(expect.arrayContaining(['PlanApproved', 'AppPromoted', 'PlanComplete']));
    const complete = hooks.find((h) => h.headers['x-kpromo-event'] === 'PlanComplete')!;
    expect(
      verifyWebhookSignature(
        hookSecret,
        String(complete.headers['x-kpromo-timestamp']),
        complete.body,
        String(complete.headers['x-kpromo-signature']),
      ),
    ).toBe(true);
    expect(JSON.parse(complete.body).data).toMatchObject({ plan: 'helm-plan', flow: 'helm', from: 'dev', to: 'helm' });
    // Credentials come from the Secret named by webhook.headersSecretRef.
    expect(complete.headers.authorization).toBe('Bearer int-test-token');
  });

  it('fails the app with helm-controller’s reason when the Helm upgrade of the HelmRelease fails', async () => {
    const r = await post(
      '/api/v1/plans',
      await withShown(ctl.port, {
        namespace: NS,
        flow: 'helmfail',
        from: 'dev',
        to: 'helmfail',
        name: 'helmfail-plan',
        approve: true,
      }),
    );
    expect(r.status).toBe(201);
    const failUpgrades = () => playHelmController(prod, APPS, 'api', { failed: UPGRADE_ERROR }).then(() => undefined);
    const p = await waitPlan(dev, NS, 'helmfail-plan', terminal, 90_000, failUpgrades);
    expect(p.status?.phase).toBe('Incomplete');
    const a = p.status!.apps![0];
    expect(a).toMatchObject({ application: 'api', phase: 'Failed', reason: 'UpgradeFailed', written: true });
    expect(a.message).toBe(
      `HelmRelease ${APPS}/api generation 2 stalled (RetriesExceeded: Failed to upgrade after 1 attempt(s)): UpgradeFailed: Helm upgrade failed for release ${APPS}/api.v2 with chart web@1.4.2: ${UPGRADE_ERROR}`,
    );
    // kpromo's values were written (and accepted by the real schema); the workload never changed.
    const hr = await prod.get<{ spec: { values: { image: Record<string, string> } } }>(
      resourcePath(HELMRELEASE, APPS, 'api'),
    );
    expect(hr.spec.values.image).toEqual({
      repository: `${target}/helm/shop/api`,
      tag: a.targetTag,
      digest: digests.api,
    });
    expect(await deploymentImage(prod, APPS, 'api')).toBe(`${target}/helm/shop/api:v1.0.0`);
  });

  it('the HelmRelease CRD is the real v2 schema: an object without a chart source is refused', async () => {
    const bad = {
      apiVersion: 'helm.toolkit.fluxcd.io/v2',
      kind: 'HelmRelease',
      metadata: { name: 'no-source', namespace: APPS },
      spec: { interval: '10m', chart: { spec: { chart: 'web' } }, values: {} },
    };
    await expect(prod.create(resourcePath(HELMRELEASE, APPS), bad)).rejects.toThrow(
      /spec\.chart\.spec\.sourceRef: Required value/,
    );
  });

  it("refuses a webhook aimed at the controller's own API: nothing reaches it, nothing secret is logged", async () => {
    // helm-plan (previous test) emitted PlanApproved and PlanComplete to the 'self' Notification too.
    const failures = await waitFor('self webhook refused twice', async () => {
      const l = logLines.filter(
        (x) => x.includes(`"notification":"${NS}/self"`) && x.includes('webhook delivery failed'),
      );
      return l.length >= 2 ? l : undefined;
    });
    for (const line of failures) {
      expect(JSON.parse(line)).toMatchObject({
        attempts: 1,
        err: `http://127.0.0.1:${ctl.port}/… blocked by egress policy: address 127.0.0.1 port ${ctl.port} is the controller's own API listener; it cannot be allowed`,
      });
    }
    expect(selfProbeRequests).toBe(0);
    const all = logLines.join('');
    for (const secret of ['int-leak', 'ssrf-probe', 'int-test-token', hookSecret]) expect(all).not.toContain(secret);
  });

  it('retries while the target registry is down, then fails the app with the reason', async () => {
    const r = await post(
      '/api/v1/plans',
      await withShown(ctl.port, {
        namespace: NS,
        flow: 'down',
        from: 'dev',
        to: 'down',
        name: 'down-plan',
        approve: true,
      }),
    );
    expect(r.status).toBe(201);
    const p = await waitPlan(dev, NS, 'down-plan', terminal, 90_000);
    expect(p.status?.phase).toBe('Incomplete');
    const a = p.status!.apps![0];
    expect(a).toMatchObject({ application: 'api', phase: 'Failed', reason: 'RegistryUnavailable', attempts: 2 });
    expect(a.message).toMatch(/gave up after 2 attempts/);
    expect(a.written).toBeFalsy();
    expect(await deploymentImage(prod, APPS, 'api')).toBe(`${target}/helm/shop/api:v1.0.0`);
    await waitFor('AppFailed webhook', async () => hooks.some((h) => h.headers['x-kpromo-event'] === 'AppFailed'));
  });

  it('a plan status write on a 409 re-reads and never overwrites a status someone else changed', async () => {
    const stale = await getPlan(dev, NS, 'helm-plan');
    // Someone else writes status first: our copy's resourceVersion and status are now stale.
    const path = resourcePath(KPROMO_TYPES.PromotionPlan, NS, 'helm-plan', 'status');
    await dev.put(path, { ...stale, status: { ...stale.status, completedAt: '2029-01-01T00:00:00Z' } });
    await expect(dev.put(path, { ...stale, status: stale.status })).rejects.toSatisfy(isConflict);
    const w = new StatusWriter<PromotionPlanStatus, PromotionPlan>(dev, stale);
    const next = { ...stale.status, succeeded: 1, completedAt: '2030-01-01T00:00:00Z' };
    await expect(w.write(next)).rejects.toBeInstanceOf(StatusConflictError);
    expect((await getPlan(dev, NS, 'helm-plan')).status?.completedAt).toBe('2029-01-01T00:00:00Z');
    // A derived status (the latest computation wins) may overwrite.
    const derived = new StatusWriter<PromotionPlanStatus, PromotionPlan>(dev, stale, { overwriteOthers: true });
    await derived.write(next);
    expect((await getPlan(dev, NS, 'helm-plan')).status?.completedAt).toBe('2030-01-01T00:00:00Z');
  });

  it('detects a HelmRelease CRD installed after the controller started, without a restart', async () => {
    const cache = ctl.controller.cache;
    const late = cache.getEnvironment(NS, 'late')!;
    expect(cache.environmentState(late)).toMatchObject({ synced: true, helmReleases: false });
    await ensureHelmReleaseCrd(stable);
    await applyHelmRelease(stable, APPS, 'web', { image: { repository: `${target}/late/shop/web`, tag: 'v0.9.0' } });
    const hr = await waitFor('HelmRelease in the cache', async () => cache.getHelmRelease(late, 'web'), 60_000);
    expect(hr.spec?.values).toEqual({ image: { repository: `${target}/late/shop/web`, tag: 'v0.9.0' } });
    // The Environment status says so too (level-triggered on the new watch).
    const e = await waitFor('late status', async () => {
      const x = await dev.get<Environment>(resourcePath(KPROMO_TYPES.Environment, NS, 'late'));
      const c = x.status?.conditions?.find((y) => y.type === 'Ready');
      return c?.message.includes('HelmReleases') ? c : undefined;
    });
    expect(e).toMatchObject({ status: 'True', reason: 'Synced' });
  });

  it('serves health, readiness and metrics', async () => {
    // Health and readiness are anonymous (kubelet probes); metrics and the API need a token.
    const get = (p: string) => callApi(ctl.port, p);
    expect((await callApi(ctl.port, '/healthz', { token: null })).status).toBe(200);
    expect((await callApi(ctl.port, '/readyz', { token: null })).status).toBe(200);
    expect(await (await get('/readyz')).json()).toMatchObject({ ready: true, detail: { synced: true, leader: true } });
    const m = await (await get('/metrics')).text();
    expect(m).toMatch(/kpromo_reconcile_total\{kind="PromotionPlan",result="success"\} \d+/);
    const envs = (await (await get(`/api/v1/environments?namespace=${NS}`)).json()) as {
      items: Array<{ name: string; delivery: string; synced: boolean }>;
    };
    expect(envs.items.map((e) => `${e.name}:${e.delivery}`).sort()).toEqual([
      'dev:patch',
      'down:patch',
      'helm:helmRelease',
      'helmfail:helmRelease',
      'late:helmRelease',
    ]);
  });
});
