import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Application, Environment, PromotionFlow, PromotionPlan } from '@kpromo/api';
import {
  applyCrds,
  createBareRepo,
  type GitHttpServer,
  gitRepository,
  kubeConfigFor,
  kustomization,
  kustomizeAppFiles,
  needComponents,
  startFlux,
  startGitHttpServer,
  stateDir,
  waitFor,
} from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  appOf,
  callApi,
  controllerConfig,
  crs,
  deleteNamespaces,
  deploymentImage,
  eventReasons,
  getDeployment,
  getPlan,
  pushTestImage,
  registryDigest,
  restFor,
  runNamespaces,
  setupNamespaces,
  TEST_ADMIN,
  isTerminalPlan as terminal,
  waitPlan,
  waitReady,
  withShown,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ControllerOptions } from '../src/controller.js';
import { KPROMO_TYPES, resourcePath } from '../src/kube/paths.js';
import { createLogger } from '../src/observability/logger.js';
import { type Running, startController } from '../src/runtime.js';

// Built before this file's hooks run (in the background on a fresh machine): test/cluster/need.ts.
await needComponents('flux');

/** Written directly with the admin kubeconfig (CN kpromo-admin), as kubectl would. */
const ADMIN_APPROVAL = [{ user: 'kpromo-admin' }];

const names = runNamespaces('ctl-e2e');
const { ns: NS, apps: APPS } = names;
const MAIN_APPS = ['cart', 'search', 'checkout'];
const FAIL_APPS = ['ghost', 'stuck', 'okapp'];
const RESUME_APPS = ['r1', 'r2'];
const HA_APPS = ['lead'];
const TWIN_APPS = ['twin'];
const ALL = [...MAIN_APPS, ...FAIL_APPS, ...RESUME_APPS, ...HA_APPS, ...TWIN_APPS];
const FAKE_DIGEST = `sha256:${'0'.repeat(63)}1`;

const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const stable = restFor(kubeconfig, 'stable');
const prod = restFor(kubeconfig, 'prod');
const log = createLogger({ level: process.env.CTL_TEST_LOG ?? 'silent' });

const devDigest: Record<string, string> = {};
const stableOld: Record<string, string> = {};
let repo: ReturnType<typeof createBareRepo>;
let gitServer: GitHttpServer;
const running: Running[] = [];
const GIT_USER = 'kpromo-bot';
const GIT_PASSWORD = 'ctl-e2e-git-pw';
const fluxPath = (plural: 'gitrepositories' | 'kustomizations', name: string) =>
  `/apis/${plural === 'gitrepositories' ? 'source' : 'kustomize'}.toolkit.fluxcd.io/v1/namespaces/${NS}/${plural}/${name}`;
const FLUX_OBJECTS = [...MAIN_APPS.map((a) => fluxPath('kustomizations', a)), fluxPath('gitrepositories', 'gitops')];

const cfg = (identity: string) =>
  controllerConfig(kubeconfig, NS, {
    leaderElection: {
      enabled: true,
      namespace: NS,
      name: 'ctl-e2e-leader',
      identity,
      leaseDurationSeconds: 4,
      renewIntervalMs: 1000,
    },
    maxAttempts: 3,
    shutdownGraceSeconds: 10,
  });

async function start(identity: string, customize?: (o: ControllerOptions) => ControllerOptions) {
  const r = await startController(cfg(identity), { log, customize });
  running.push(r);
  return r;
}
async function stop(r: Running) {
  await r.stop();
  running.splice(running.indexOf(r), 1);
}

const api = (r: Running, path: string, init?: { method?: string; body?: unknown }) => callApi(r.port, path, init);
/** POST /api/v1/plans in the test namespace. */
/** POST /api/v1/plans; a create-and-approve sends the digests GET /diff shows now (what a reviewer saw). */
const postPlan = async (r: Running, body: { from: string; to: string; approve?: boolean; [k: string]: unknown }) =>
  api(r, '/api/v1/plans', {
    method: 'POST',
    body: body.approve ? await withShown(r.port, { namespace: NS, ...body }) : { namespace: NS, ...body },
  });

/** Wraps copyImage to record every copy this controller instance performs. */
const countCopies =
  (into: string[]) =>
  (o: ControllerOptions): ControllerOptions => ({
    ...o,
    copyImage: async (req) => {
      into.push(req.target.repository);
      return o.copyImage(req);
    },
  });

const env = (name: string, registry: object, delivery: object, context = name) =>
  crs.environment(NS, name, { context, namespace: APPS, registry, delivery });
const flow = (name: string, stages: string[], apps: string[], extra: object = {}) =>
  crs.flow(NS, name, stages, { selector: { applications: apps }, ...extra });
const ready = (o: { status?: { conditions?: Array<{ type: string }> } }) =>
  o.status?.conditions?.find((c) => c.type === 'Ready') as
    | { status: string; reason: string; message: string; observedGeneration?: number }
    | undefined;
const getCr = <T>(kind: 'PromotionFlow' | 'Environment' | 'Application', name: string) =>
  dev.get<T & { metadata: { generation?: number; resourceVersion?: string } }>(
    resourcePath(KPROMO_TYPES[kind], NS, name),
  );

beforeAll(async () => {
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  await setupNamespaces(dev, [dev, stable, prod], names);

  // Images: what runs in dev (source registry) and the older versions already in stable/prod (target registry).
  for (const app of ALL) {
    if (app !== 'ghost')
      devDigest[app] = (
        await pushTestImage({ host: source, repository: `shop/${app}`, tag: 'v1.2.0', seed: `new-${app}` })
      ).digest;
    stableOld[app] = (
      await pushTestImage({ host: target, repository: `stable/shop/${app}`, tag: 'v1.1.0', seed: `old-${app}` })
    ).digest;
  }
  devDigest.ghost = FAKE_DIGEST;
  const prodOld: Record<string, string> = {};
  for (const app of MAIN_APPS)
    prodOld[app] = (
      await pushTestImage({ host: target, repository: `prod/shop/${app}`, tag: 'v1.0.0', seed: `older-${app}` })
    ).digest;

  // prod is delivered through git: upstream Flux (source- and kustomize-controller, running against dev)
  // pulls the repository over HTTP and applies each app's folder to the prod cluster.
  repo = createBareRepo(
    Object.assign(
      {},
      ...MAIN_APPS.map((a) =>
        kustomizeAppFiles({ dir: `apps/${a}`, name: a, image: `${target}/prod/shop/${a}:v1.0.0@${prodOld[a]}` }),
      ),
    ),
  );
  gitServer = await startGitHttpServer({ root: dirname(repo.dir), users: { [GIT_USER]: GIT_PASSWORD } });
  const gitUrl = gitServer.url('remote.git');
  await startFlux({ kubeconfig });
  const secret = (name: string, type: string, data: Record<string, string>, annotations?: Record<string, string>) =>
    dev.apply(
      `/api/v1/namespaces/${NS}/secrets/${name}`,
      {
        apiVersion: 'v1',
        kind: 'Secret',
        type,
        // With annotations: a credential kpromo sends (credentialPolicy.ts), opted in by its label.
        metadata: {
          name,
          namespace: NS,
          ...(annotations ? { annotations, labels: { 'promotions.kpromo.dev/credential': 'true' } } : {}),
        },
        data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
      },
      'ctl-test',
    );
  // Flux reads username/password; kpromo also needs the opt-in label and where they may be sent.
  await secret(
    'gitops-creds',
    'kubernetes.io/basic-auth',
    { username: GIT_USER, password: GIT_PASSWORD },
    { 'promotions.kpromo.dev/destinations': `${gitServer.baseUrl}/` },
  );
  // Flux applies to prod through a kubeconfig Secret (Kustomization spec.kubeConfig).
  await secret('prod-kubeconfig', 'Opaque', {
    value: readFileSync(join(stateDir(), 'prod', 'admin.kubeconfig'), 'utf8'),
  });
  await dev.apply(
    fluxPath('gitrepositories', 'gitops'),
    gitRepository({ namespace: NS, name: 'gitops', url: gitUrl, secretName: 'gitops-creds' }),
    'ctl-test',
  );
  for (const app of MAIN_APPS) {
    const k = kustomization({
      namespace: NS,
      name: app,
      source: 'gitops',
      path: `./apps/${app}`,
      targetNamespace: APPS,
      wait: true,
    });
    await dev.apply(
      fluxPath('kustomizations', app),
      { ...k, spec: { ...k.spec, kubeConfig: { secretRef: { name: 'prod-kubeconfig' } } } },
      'ctl-test',
    );
  }

  for (const app of ALL) {
    await applyDeployment(dev, APPS, app, `${source}/shop/${app}:v1.2.0@${devDigest[app]}`);
    await applyDeployment(stable, APPS, app, `${target}/stable/shop/${app}:v1.1.0@${stableOld[app]}`, {
      stuck: app === 'stuck' || app === 'r2' || app === 'twin',
    });
  }
  for (const app of ALL) await waitReady(dev, APPS, app);
  // Flux, not the test, creates prod's Deployments from the seed commit.
  for (const app of MAIN_APPS) await waitReady(prod, APPS, app, 120_000);

  await applyCr(dev, env('dev', { host: source, insecure: true }, { method: 'patch' }));
  await applyCr(dev, env('stable', { host: target, prefix: 'stable', insecure: true }, { method: 'patch' }));
  await applyCr(
    dev,
    env(
      'prod',
      { host: target, prefix: 'prod', insecure: true },
      {
        method: 'git',
        git: {
          repository: gitUrl,
          branch: 'main',
          path: 'apps/{app}/image.yaml',
          valuesPath: 'data.image',
          credentialsSecretRef: { name: 'gitops-creds' },
          // The verdict waits until Flux (running against the control cluster, applying to prod) has
          // applied kpromo's commit.
          kustomization: { name: '{app}', namespace: NS, cluster: 'control' },
        },
      },
    ),
  );
  await applyCr(
    dev,
    flow('main', ['dev', 'stable', 'prod'], MAIN_APPS, { concurrency: 2, rolloutTimeoutSeconds: 120 }),
  );
  await applyCr(dev, flow('failing', ['dev', 'stable'], FAIL_APPS, { rolloutTimeoutSeconds: 10 }));
  await applyCr(dev, flow('resume', ['dev', 'stable'], RESUME_APPS, { rolloutTimeoutSeconds: 600 }));
  await applyCr(dev, flow('ha', ['dev', 'stable'], HA_APPS));
  await applyCr(dev, flow('twins', ['dev', 'stable'], TWIN_APPS, { rolloutTimeoutSeconds: 120 }));
  for (const app of ALL) await applyCr(dev, crs.application(NS, app, 'team-a'));
});

afterAll(async () => {
  for (const r of [...running]) await stop(r).catch(() => undefined);
  // Flux objects first, while Flux runs to prune and drop their finalizers; then the namespaces.
  for (const p of FLUX_OBJECTS) await dev.delete(p).catch(() => undefined);
  await waitFor(
    'Flux objects finalized',
    async () => (await Promise.all(FLUX_OBJECTS.map((p) => dev.getOrUndefined(p)))).every((o) => !o),
    30_000,
  ).catch((e) => console.warn(`[flux] ${(e as Error).message}`));
  await deleteNamespaces(dev, [dev, stable, prod], names);
  await gitServer?.stop();
  // Flux keeps running for the other files of this run; the global teardown stops it.
});

describe('controller against real clusters, registries and git', () => {
  let ctl: Running;

  it('promotes dev -> stable (patch) -> prod (git) end to end', async () => {
    ctl = await start('ctl-a');
    await waitFor('leader', async () => ctl.controller.isLeader, 20_000);

    // Versions per environment come from the workload informers.
    const apps = await waitFor('cache warm', async () => {
      const r = (await (await api(ctl, `/api/v1/applications?namespace=${NS}`)).json()) as {
        items: Array<{ name: string; versions: Array<{ environment: string; digest?: string; health: string }> }>;
      };
      const cart = r.items.find((a) => a.name === 'cart');
      return cart?.versions.find((v) => v.environment === 'dev')?.health === 'Healthy' ? r : undefined;
    });
    expect(apps.items.find((a) => a.name === 'cart')?.versions.find((v) => v.environment === 'dev')?.digest).toBe(
      devDigest.cart,
    );

    // Plan from the cache, then approve; approving twice is refused.
    const created = await postPlan(ctl, { flow: 'main', from: 'dev', to: 'stable', name: 'main-stable' });
    expect(created.status).toBe(201);
    const { plan } = (await created.json()) as { plan: PromotionPlan };
    expect(plan.spec.candidates.map((c) => c.application)).toEqual(['cart', 'checkout', 'search']);
    expect(plan.spec.candidates.find((c) => c.application === 'cart')).toMatchObject({
      from: { tag: 'v1.2.0', digest: devDigest.cart },
      to: { tag: 'v1.1.0', digest: stableOld.cart },
    });
    const pending = await waitPlan(dev, NS, 'main-stable', (p) => p.status?.phase === 'Pending');
    expect(pending.status?.conditions?.find((c) => c.type === 'Approved')?.reason).toBe('AwaitingApproval');
    expect(pending.spec.requestedBy).toBe(TEST_ADMIN.username);
    // The approver is the authenticated caller; a name in the body is ignored.
    const approve = await api(ctl, `/api/v1/plans/${NS}/main-stable/approve`, {
      method: 'POST',
      body: { approvedBy: 'mallory', uid: plan.metadata.uid },
    });
    expect(approve.status).toBe(200);
    expect(((await approve.json()) as PromotionPlan).spec.approvals).toEqual([
      { user: TEST_ADMIN.username, planUID: plan.metadata.uid },
    ]);
    const again = await api(ctl, `/api/v1/plans/${NS}/main-stable/approve`, {
      method: 'POST',
      body: { uid: plan.metadata.uid },
    });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: string }).error).toMatch(/already approved by kpromo-test-admin/);

    const done = await waitPlan(dev, NS, 'main-stable', terminal);
    expect(done.status?.phase).toBe('Complete');
    expect(done.status?.succeeded).toBe(3);
    const ready = done.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'True', reason: 'Complete', observedGeneration: done.metadata.generation });
    for (const app of MAIN_APPS) {
      const a = appOf(done, app)!;
      expect(a).toMatchObject({
        phase: 'Succeeded',
        copied: true,
        written: true,
        digest: devDigest[app],
        previous: { tag: 'v1.1.0', digest: stableOld[app] },
      });
      expect(a.targetTag).toMatch(/^v1\.2\.0-\d{8}T\d{6}Z$/);
      // Copied with the digest unchanged, under the unique tag, in the real target registry.
      expect(await registryDigest(target, `stable/shop/${app}`, a.targetTag!)).toBe(devDigest[app]);
      const d = await getDeployment(stable, APPS, app);
      expect(d.spec?.template?.spec?.containers?.[0]?.image).toBe(
        `${target}/stable/shop/${app}:${a.targetTag}@${devDigest[app]}`,
      );
      expect(d.status?.availableReplicas).toBe(1);
    }
    // Application status mirrors what runs where (the exporter and portals read it).
    const cartStatus = await waitFor('cart status versions', async () => {
      const a = await dev.get<Application>(resourcePath(KPROMO_TYPES.Application, NS, 'cart'));
      const st = a.status?.versions?.find((v) => v.environment === 'stable');
      return st?.digest === devDigest.cart && st.health === 'Healthy' ? a.status : undefined;
    });
    expect(cartStatus.versions?.map((v) => v.environment).sort()).toEqual(['dev', 'prod', 'stable']);
    expect(cartStatus.versions?.find((v) => v.environment === 'stable')?.updatedAt).toMatch(/^\d{4}-/);
    expect(cartStatus.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(await eventReasons(dev, NS, 'main-stable')).toEqual(
      expect.arrayContaining(['Approved', 'ImageCopied', 'DesiredStateWritten', 'AppPromoted', 'Complete']),
    );

    // stable -> prod through git: the controller commits, Flux fetches and applies it to prod, kwok rolls
    // out; the plan completes only once Flux has applied the commit and the Deployments are Ready.
    const created2 = await postPlan(ctl, {
      flow: 'main',
      from: 'stable',
      to: 'prod',
      name: 'main-prod',
      approve: true,
    });
    expect(created2.status).toBe(201);
    const prodDone = await waitPlan(dev, NS, 'main-prod', terminal, 150_000);
    expect(prodDone.status?.phase, JSON.stringify(prodDone.status?.apps)).toBe('Complete');
    const log = repo.log();
    for (const app of MAIN_APPS) {
      const a = appOf(prodDone, app)!;
      expect(a.phase).toBe('Succeeded');
      expect(a.commit).toMatch(/^[0-9a-f]{40}$/);
      expect(await registryDigest(target, `prod/shop/${app}`, a.targetTag!)).toBe(devDigest[app]);
      const promoted = `${target}/prod/shop/${app}:${a.targetTag}@${devDigest[app]}`;
      expect(repo.read(`apps/${app}/image.yaml`)).toContain(`image: ${promoted}`);
      // The file's comment survives the edit.
      expect(repo.read(`apps/${app}/image.yaml`)).toContain(`# The image ${app} runs here`);
      // Applied to prod by kustomize-controller: kpromo's commit or a later one of the same repository
      // (the three apps' commits land one after another), which then contains it.
      const k = await dev.get<{ status?: { lastAppliedRevision?: string } }>(fluxPath('kustomizations', app));
      const applied = /^main@sha1:([0-9a-f]{40})$/.exec(k.status?.lastAppliedRevision ?? '')?.[1];
      expect(applied, k.status?.lastAppliedRevision).toBeDefined();
      // (Which of the three commits the status names at this moment races with Flux's polling; the
      // Deployment below shows that what runs is kpromo's.)
      expect((await getDeployment(prod, APPS, app)).spec?.template?.spec?.containers?.[0]?.image).toBe(promoted);
      expect(log.some((m) => m.startsWith(`Promote ${app} to ${a.targetTag} in prod`))).toBe(true);
    }
    expect(log.filter((m) => m.startsWith('Promote '))).toHaveLength(3);
  });

  it('writes PromotionFlow and Environment status from the cache; bad references get clear messages', async () => {
    type Flow = PromotionFlow;
    type Env = Environment;
    // main: everything promoted; failing: ghost, stuck and okapp differ between dev and stable.
    const main = await waitFor('flow main status', async () => {
      const f = await getCr<Flow>('PromotionFlow', 'main');
      return f.status?.pendingCandidates === 0 && ready(f)?.status === 'True' ? f : undefined;
    });
    expect(ready(main)).toMatchObject({
      reason: 'Ready',
      observedGeneration: main.metadata.generation,
      message: '0 release candidate(s) pending (dev -> stable: 0, stable -> prod: 0)',
    });
    expect(main.status?.observedGeneration).toBe(main.metadata.generation);
    const failing = await waitFor('flow failing status', async () => {
      const f = await getCr<Flow>('PromotionFlow', 'failing');
      return f.status?.pendingCandidates === 3 ? f : undefined;
    });
    expect(ready(failing)?.message).toBe('3 release candidate(s) pending (dev -> stable: 3)');
    for (const [name, count] of [
      ['dev', ALL.length],
      ['stable', ALL.length],
      ['prod', MAIN_APPS.length],
    ] as const) {
      const e = await waitFor(`environment ${name} status`, async () => {
        const x = await getCr<Env>('Environment', name);
        return x.status?.applications === count && ready(x)?.status === 'True' ? x : undefined;
      });
      expect(ready(e)).toMatchObject({ reason: 'Synced', observedGeneration: e.metadata.generation });
      expect(ready(e)?.message).toContain(`namespace ${APPS} of cluster context:${name}; ${count} application(s)`);
    }

    // Bad references: a flow naming an unknown Environment, an Environment naming an unknown context.
    await applyCr(dev, flow('bad-ref', ['dev', 'qa'], ['cart']));
    await applyCr(dev, env('nowhere', { host: target, insecure: true }, { method: 'patch' }, 'no-such-context'));
    const badFlow = await waitFor('bad-ref status', async () => {
      const f = await getCr<Flow>('PromotionFlow', 'bad-ref');
      return ready(f) ? f : undefined;
    });
    expect(ready(badFlow)).toMatchObject({
      status: 'False',
      reason: 'EnvironmentNotFound',
      message: `Environment "qa" (stage 2) does not exist in namespace ${NS}; fix spec.stages`,
      observedGeneration: badFlow.metadata.generation,
    });
    expect(badFlow.status?.pendingCandidates).toBeUndefined();
    const badEnv = await waitFor('nowhere status', async () => {
      const e = await getCr<Env>('Environment', 'nowhere');
      return ready(e) ? e : undefined;
    });
    expect(ready(badEnv)).toMatchObject({
      status: 'False',
      reason: 'ClusterUnreachable',
      message: 'kubeconfig has no context "no-such-context"; add it or fix Environment spec.cluster.context',
      observedGeneration: badEnv.metadata.generation,
    });
    // A broken Environment does not freeze Application status: the others keep being reported and
    // the broken one is Unknown with the reason.
    const cartStatus = await waitFor('cart status lists the unreachable environment', async () => {
      const a = await getCr<Application>('Application', 'cart');
      return a.status?.versions?.some((v) => v.environment === 'nowhere') ? a : undefined;
    });
    expect(cartStatus.status?.versions?.find((v) => v.environment === 'nowhere')).toMatchObject({
      health: 'Unknown',
      message: expect.stringContaining('cluster not reachable: kubeconfig has no context "no-such-context"'),
    });
    expect(cartStatus.status?.versions?.find((v) => v.environment === 'dev')?.tag).toBeTruthy();
    // Fixing the reference turns the flow Ready (level-triggered on the Environment event).
    await applyCr(dev, flow('bad-ref', ['dev', 'nowhere'], ['cart']));
    const refixed = await waitFor('bad-ref names nowhere', async () => {
      const f = await getCr<Flow>('PromotionFlow', 'bad-ref');
      return ready(f)?.reason === 'EnvironmentNotReady' ? f : undefined;
    });
    expect(ready(refixed)?.message).toBe(`Environment "nowhere": ${ready(badEnv)?.message}`);
    await dev.delete(resourcePath(KPROMO_TYPES.PromotionFlow, NS, 'bad-ref'));
    await dev.delete(resourcePath(KPROMO_TYPES.Environment, NS, 'nowhere'));

    // No status churn: nothing changes, nothing is written.
    const rv = async () =>
      [
        (await getCr<Flow>('PromotionFlow', 'main')).metadata.resourceVersion,
        (await getCr<Env>('Environment', 'stable')).metadata.resourceVersion,
      ].join();
    const before = await rv();
    await new Promise((r) => setTimeout(r, 3000));
    expect(await rv()).toBe(before);
  });

  it('fails only the broken apps: missing image and a rollout that never gets ready', async () => {
    const r = await postPlan(ctl, {
      flow: 'failing',
      from: 'dev',
      to: 'stable',
      name: 'failing-stable',
      approve: true,
    });
    expect(r.status).toBe(201);
    const t0 = Date.now();
    const p = await waitPlan(dev, NS, 'failing-stable', terminal, 90_000);
    expect(p.status?.phase).toBe('Incomplete');
    expect(p.status).toMatchObject({ succeeded: 1, failed: 2 });
    expect(appOf(p, 'okapp')?.phase).toBe('Succeeded');
    expect(appOf(p, 'ghost')).toMatchObject({ phase: 'Failed', reason: 'ImageNotFound' });
    expect(appOf(p, 'ghost')?.copied).toBeFalsy();
    expect(appOf(p, 'ghost')?.written).toBeFalsy();
    expect(appOf(p, 'ghost')?.message).toContain('shop/ghost');
    expect(appOf(p, 'stuck')).toMatchObject({ phase: 'Failed', reason: 'RolloutTimeout', written: true });
    expect(appOf(p, 'stuck')?.message).toMatch(/not ready after 10s/);
    const st = appOf(p, 'stuck')!;
    expect(Date.parse(st.finishedAt!) - Date.parse(st.startedAt!)).toBeGreaterThanOrEqual(10_000);
    expect(Date.now() - t0).toBeLessThan(60_000);
    expect(p.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Incomplete',
    });
    // The missing image was never written anywhere.
    expect(await deploymentImage(stable, APPS, 'ghost')).toContain(stableOld.ghost);
    expect(await eventReasons(dev, NS, 'failing-stable')).toContain('AppFailed');
  });

  it('rolls back a completed plan to the previous versions', async () => {
    const r = await api(ctl, `/api/v1/plans/${NS}/failing-stable/rollback`, {
      method: 'POST',
      body: { approve: true, name: 'failing-rollback', uid: (await getPlan(dev, NS, 'failing-stable')).metadata.uid },
    });
    expect(r.status).toBe(201);
    const p = await waitPlan(dev, NS, 'failing-rollback', terminal, 90_000);
    // okapp (ready) is restored; stuck stays stuck (its old pods cannot schedule either) -> Incomplete.
    expect(appOf(p, 'okapp')).toMatchObject({ phase: 'Succeeded', targetTag: 'v1.1.0', digest: stableOld.okapp });
    expect(appOf(p, 'ghost')).toBeUndefined(); // never written, nothing to undo
    expect(appOf(p, 'stuck')?.phase).toBe('Failed');
    expect(p.status?.phase).toBe('Incomplete');
    // The original plan records that okapp was rolled back.
    expect(appOf(await getPlan(dev, NS, 'failing-stable'), 'okapp')?.phase).toBe('RolledBack');
    const d = await getDeployment(stable, APPS, 'okapp');
    expect(d.spec?.template?.spec?.containers?.[0]?.image).toBe(
      `${target}/stable/shop/okapp:v1.1.0@${stableOld.okapp}`,
    );
  });

  it('stops a started plan cleanly when its Application is deleted mid-rollout', async () => {
    const r = await postPlan(ctl, {
      flow: 'failing',
      from: 'dev',
      to: 'stable',
      name: 'vanishing',
      applications: ['stuck'],
      approve: true,
    });
    expect(r.status).toBe(201);
    await waitPlan(dev, NS, 'vanishing', (p) => appOf(p, 'stuck')?.phase === 'RollingOut', 30_000);
    await dev.delete(resourcePath(KPROMO_TYPES.Application, NS, 'stuck'));
    const p = await waitPlan(dev, NS, 'vanishing', terminal, 30_000);
    expect(p.status?.phase).toBe('Incomplete');
    expect(appOf(p, 'stuck')).toMatchObject({ phase: 'Failed', reason: 'ApplicationNotFound' });
    expect(appOf(p, 'stuck')?.message).toMatch(/stopped: Application\(s\) stuck do not exist/);
    expect(p.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ApplicationNotFound',
    });
  });

  it('rejects bad input with clear conditions and writes nothing', async () => {
    const base = { kind: 'PromotionPlan', metadata: { namespace: NS } };
    const cand = (app: string) => ({ application: app, from: { tag: 'v1.2.0', digest: devDigest.cart } });
    await applyCr(dev, {
      ...base,
      metadata: { ...base.metadata, name: 'bad-flow' },
      spec: { flow: 'nope', from: 'dev', to: 'stable', candidates: [cand('cart')], approvals: ADMIN_APPROVAL },
    } as never);
    await applyCr(dev, {
      ...base,
      metadata: { ...base.metadata, name: 'bad-stages' },
      spec: { flow: 'main', from: 'dev', to: 'prod', candidates: [cand('cart')], approvals: ADMIN_APPROVAL },
    } as never);
    await applyCr(dev, {
      ...base,
      metadata: { ...base.metadata, name: 'bad-app' },
      spec: {
        flow: 'main',
        from: 'dev',
        to: 'stable',
        candidates: [cand('cart'), cand('unknown-app')],
        approvals: ADMIN_APPROVAL,
      },
    } as never);
    await applyCr(dev, {
      ...base,
      metadata: { ...base.metadata, name: 'bad-env' },
      spec: { flow: 'main', from: 'dev', to: 'qa', candidates: [cand('cart')], approvals: ADMIN_APPROVAL },
    } as never);
    const expectations: Record<string, [string, RegExp]> = {
      'bad-flow': ['FlowNotFound', /PromotionFlow "nope" does not exist/],
      'bad-stages': ['NotAdjacent', /dev -> prod is not a stage transition.*valid: dev -> stable, stable -> prod/],
      'bad-app': ['ApplicationNotFound', /unknown-app do not exist/],
      'bad-env': ['EnvironmentNotFound', /Environment "qa"/],
    };
    const cartBefore = await deploymentImage(stable, APPS, 'cart');
    for (const [name, [reason, msg]] of Object.entries(expectations)) {
      const p = await waitPlan(dev, NS, name, (x) => x.status?.phase === 'Failed', 30_000);
      const c = p.status?.conditions?.find((x) => x.type === 'Ready');
      expect(c).toMatchObject({ status: 'False', reason, observedGeneration: p.metadata.generation });
      expect(c?.message).toMatch(msg);
      expect(p.status?.apps ?? []).toEqual([]);
    }
    expect(await deploymentImage(stable, APPS, 'cart')).toBe(cartBefore);
    // API-level: non-adjacent stages are refused before anything is created.
    const r = await postPlan(ctl, { flow: 'main', from: 'dev', to: 'prod' });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toMatch(/not a stage transition/);
  });

  it('promotes an app into an environment for one plan at a time; the second plan waits', async () => {
    const plan = (name: string) =>
      applyCr(dev, {
        kind: 'PromotionPlan',
        metadata: { name, namespace: NS },
        spec: {
          flow: 'twins',
          from: 'dev',
          to: 'stable',
          candidates: [{ application: 'twin', from: { tag: 'v1.2.0', digest: devDigest.twin } }],
          approvals: ADMIN_APPROVAL,
        },
      } as never);
    // The first plan writes twin into stable, whose pods cannot schedule: it stays RollingOut.
    await plan('twin-first');
    await waitPlan(dev, NS, 'twin-first', (p) => appOf(p, 'twin')?.phase === 'RollingOut', 60_000);
    await plan('twin-second');
    const waiting = await waitPlan(
      dev,
      NS,
      'twin-second',
      (p) => appOf(p, 'twin')?.reason === 'WaitingForPlan',
      30_000,
    );
    expect(appOf(waiting, 'twin')).toMatchObject({
      phase: 'Pending',
      message: 'waiting for PromotionPlan twin-first, which is promoting twin into stable',
    });
    expect(waiting.status?.phase).toBe('Promoting');
    await new Promise((r) => setTimeout(r, 2000));
    const still = appOf(await getPlan(dev, NS, 'twin-second'), 'twin');
    expect(still).toMatchObject({ phase: 'Pending', reason: 'WaitingForPlan' });
    expect(still?.copied).toBeFalsy();
    expect(still?.startedAt).toBeUndefined();

    // Unstick the rollout: the first plan completes, then the second proceeds.
    const image = (await deploymentImage(stable, APPS, 'twin'))!;
    await applyDeployment(stable, APPS, 'twin', image);
    const first = await waitPlan(dev, NS, 'twin-first', terminal, 60_000);
    expect(first.status?.phase).toBe('Complete');
    const second = await waitPlan(dev, NS, 'twin-second', terminal, 60_000);
    expect(second.status?.phase).toBe('Complete');
    const a = appOf(second, 'twin')!;
    expect(a.phase).toBe('Succeeded');
    expect(Date.parse(a.startedAt!)).toBeGreaterThanOrEqual(Date.parse(appOf(first, 'twin')!.finishedAt!));
  });

  it('resumes a half-done plan after a restart without redoing finished steps', async () => {
    const copies: string[] = [];
    await stop(ctl);
    ctl = await start('ctl-b', countCopies(copies));
    await waitFor('leader b', async () => ctl.controller.isLeader, 20_000);
    expect(
      (await postPlan(ctl, { flow: 'resume', from: 'dev', to: 'stable', name: 'resume-stable', approve: true })).status,
    ).toBe(201);
    // r1 finishes; r2 is written but cannot become ready (pinned to no node).
    const mid = await waitPlan(
      dev,
      NS,
      'resume-stable',
      (p) =>
        appOf(p, 'r1')?.phase === 'Succeeded' && appOf(p, 'r2')?.phase === 'RollingOut' && !!appOf(p, 'r2')?.written,
    );
    expect(copies.sort()).toEqual(['stable/shop/r1', 'stable/shop/r2']);
    await stop(ctl);

    // While the controller is down, the cluster gets fixed; the new leader must only finish r2's rollout.
    await applyDeployment(stable, APPS, 'r2', (await deploymentImage(stable, APPS, 'r2'))!);
    const copiesAfter: string[] = [];
    ctl = await start('ctl-c', countCopies(copiesAfter));
    const done = await waitPlan(dev, NS, 'resume-stable', terminal);
    expect(done.status?.phase).toBe('Complete');
    expect(copiesAfter).toEqual([]);
    expect(appOf(done, 'r1')?.finishedAt).toBe(appOf(mid, 'r1')?.finishedAt);
    expect(appOf(done, 'r2')?.targetTag).toBe(appOf(mid, 'r2')?.targetTag);
    expect((await eventReasons(dev, NS, 'resume-stable')).filter((r) => r === 'ImageCopied')).toHaveLength(2);
  });

  it('with two replicas only the leader reconciles; the other takes over when it stops', async () => {
    const dCopies: string[] = [];
    const a = ctl;
    const d = await start('ctl-d', countCopies(dCopies));
    // Let d campaign a few times; it must not get the lease while a renews it.
    await waitFor('ctl-d campaigned', async () => d.controller.elector!.attempts >= 3, 20_000);
    expect(a.controller.isLeader).toBe(true);
    expect(d.controller.isLeader).toBe(false);
    // d answers the API from its own cache: its Environments' workloads must be read first, or it
    // finds no candidates (a CI run posted while they were still listing: 400).
    await waitFor(
      'ctl-d read the Environments',
      async () => {
        const envs = d.controller.cache.environments(NS);
        return envs.length > 0 && envs.every((e) => d.controller.cache.environmentSynced(e));
      },
      30_000,
    );
    const created = await postPlan(d, { flow: 'ha', from: 'dev', to: 'stable', name: 'ha-stable', approve: true });
    expect(created.status, await created.clone().text()).toBe(201);
    const p = await waitPlan(dev, NS, 'ha-stable', terminal);
    expect(p.status?.phase).toBe('Complete');
    expect(dCopies).toEqual([]);
    expect(d.controller.isLeader).toBe(false);
    await stop(a);
    await waitFor('ctl-d takes over', async () => d.controller.isLeader, 10_000);
    ctl = d;
  });
});
