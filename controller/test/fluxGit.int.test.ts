import type { AppProgress, PromotionPlan } from '@kpromo/api';
import {
  type Flux,
  type FluxStatus,
  fluxReady,
  headCommit,
  kustomizeAppFiles,
  needComponents,
  pushFiles,
  startFlux,
  waitFor,
} from '@kpromo/test-harness';
import {
  appliedCommit,
  applyCr,
  applyDeployment,
  applyDevProdEnvironments,
  appOf,
  controllerConfig,
  crs,
  deleteNs,
  ensureNs,
  fluxPath,
  type Gitops,
  getDeployment,
  promoteAndWait,
  pushTestImage,
  restFor,
  runNamespaces,
  startGitops,
  waitReady,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { createLogger } from '../src/observability/logger.js';
import { type Running, startController } from '../src/runtime.js';

// Built before this file's hooks run (in the background on a fresh machine): test/cluster/need.ts.
await needComponents('flux');

/**
 * Git delivery with the real GitOps agent: upstream Flux (source-controller + kustomize-controller,
 * test/flux) pulls the repository kpromo commits to from a local smart-HTTP git server and applies
 * it to the dev cluster, where kwok makes the pods Ready. Both Environments live on the dev cluster:
 * `dev` (patch delivery, namespace APPS) and `prod` (git delivery, namespace GITOPS, which only Flux
 * writes to).
 */
const names = runNamespaces('flux-git');
const NS = names.ns; // kpromo CRs, the Flux objects and the git credentials Secret
const APPS = names.apps; // dev: the source stage
const GITOPS = `${names.apps}-gitops`; // prod: Kustomization targetNamespace

const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const log = createLogger({ level: process.env.CTL_TEST_LOG ?? 'silent' });

let flux: Flux;
let gitops: Gitops;
let ctl: Running;
const devDigest: Record<string, string> = {};
const prodOld: Record<string, string> = {};
const prodImage = (app: string) => `${target}/prod/shop/${app}:v1.1.0@${prodOld[app]}`;
const appFiles = (app: string) => kustomizeAppFiles({ dir: `apps/${app}`, name: app, image: prodImage(app) });

beforeAll(async () => {
  const t0 = Date.now();
  flux = await startFlux({ kubeconfig, log: (m) => console.log(`[flux] ${m}`) });
  console.log(`[flux] ${flux.started ? 'started' : 'reused'} in ${Date.now() - t0} ms`);
  for (const ns of [NS, APPS, GITOPS]) await ensureNs(dev, ns);

  for (const app of ['web', 'broken']) {
    devDigest[app] = (
      await pushTestImage({ host: source, repository: `shop/${app}`, tag: 'v1.2.0', seed: `flux-new-${app}` })
    ).digest;
    prodOld[app] = (
      await pushTestImage({ host: target, repository: `prod/shop/${app}`, tag: 'v1.1.0', seed: `flux-old-${app}` })
    ).digest;
    await applyDeployment(dev, APPS, app, `${source}/shop/${app}:v1.2.0@${devDigest[app]}`);
  }

  // The GitOps repository, served over smart HTTP with basic auth to both Flux (go-git) and kpromo
  // (git CLI), with one credentials Secret for both; each app's Kustomization waits for health.
  gitops = await startGitops({ dev, flux, ns: NS, files: { ...appFiles('web'), ...appFiles('broken') } });
  for (const app of ['web', 'broken']) await gitops.addApp(app, GITOPS, { wait: true });

  // Flux, not the test, creates prod's Deployments from the seed commit.
  const seed = headCommit(gitops.repo.dir);
  for (const app of ['web', 'broken']) {
    // Ready too: kustomize-controller records the applied revision and may start its next pass
    // (Ready Unknown, Progressing) before a poll sees Ready True.
    const s = await gitops.waitKustomization(
      app,
      'applies the seed',
      (x) => appliedCommit(x) === seed && fluxReady(x)?.status === 'True',
    );
    expect(fluxReady(s)).toMatchObject({ status: 'True', reason: 'ReconciliationSucceeded' });
    await waitReady(dev, GITOPS, app);
    await waitReady(dev, APPS, app);
  }

  await applyDevProdEnvironments(dev, {
    ns: NS,
    apps: APPS,
    gitops: GITOPS,
    source,
    target,
    // The verdict also waits for Flux to apply kpromo's commit, and fails with Flux's reason.
    delivery: gitops.gitDelivery({ path: 'apps/{app}/image.yaml', valuesPath: 'data.image' }),
  });
  await applyCr(
    dev,
    crs.flow(NS, 'main', ['dev', 'prod'], { selector: { applications: ['web'] }, rolloutTimeoutSeconds: 120 }),
  );
  await applyCr(
    dev,
    crs.flow(NS, 'fragile', ['dev', 'prod'], { selector: { applications: ['broken'] }, rolloutTimeoutSeconds: 30 }),
  );
  for (const app of ['web', 'broken']) await applyCr(dev, crs.application(NS, app, 'team-a'));

  ctl = await startController(controllerConfig(kubeconfig, NS, { leaderElection: { enabled: false } }), { log });
});

afterAll(async () => {
  await ctl?.stop();
  // Flux objects first (gitops.stop), while Flux runs to prune what they applied and drop their
  // finalizers (a namespace holding them would stay Terminating), then the namespaces.
  await gitops?.stop();
  for (const ns of [NS, APPS, GITOPS]) await deleteNs(dev, ns);
  // Flux itself keeps running for the other files of this run; the global teardown stops it.
});

const promote = (flow: string, name: string): Promise<PromotionPlan> =>
  promoteAndWait(ctl.port, dev, { namespace: NS, flow, from: 'dev', to: 'prod', name }, { timeoutMs: 150_000 });

describe('git delivery with upstream Flux as the GitOps agent', () => {
  let failed: AppProgress;
  let failedKs: FluxStatus;

  it('kpromo commits, source-controller fetches, kustomize-controller applies, kwok rolls out', async () => {
    const plan = await promote('main', 'web-prod');
    const a = appOf(plan, 'web')!;
    expect(plan.status?.phase).toBe('Complete');
    expect(a).toMatchObject({ phase: 'Succeeded', copied: true, written: true, digest: devDigest.web });
    expect(a.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(headCommit(gitops.repo.dir)).toBe(a.commit);
    const promoted = `${target}/prod/shop/web:${a.targetTag}@${devDigest.web}`;
    expect(parseYaml(gitops.repo.read('apps/web/image.yaml'))).toMatchObject({ data: { image: promoted } });

    // The source artifact of kpromo's commit, served by source-controller's artifact server.
    const src = await waitFor('GitRepository at the promotion commit', async () => {
      const s = (await dev.get<{ status?: FluxStatus }>(fluxPath(NS, 'gitrepositories', 'gitops'))).status;
      return s?.artifact?.revision?.endsWith(a.commit!) ? s : undefined;
    });
    expect(src.artifact?.revision).toBe(`main@sha1:${a.commit}`);
    expect(src.artifact?.url?.startsWith(`${flux.sourceUrl}/gitrepository/${NS}/gitops/`)).toBe(true);

    // Flux applied exactly that commit, and its health check (wait: true) passed.
    const ks = await gitops.waitKustomization(
      'web',
      'applies the promotion commit',
      (s) => appliedCommit(s) === a.commit,
    );
    expect(ks.lastAppliedRevision).toContain(a.commit!);
    expect(ks.lastAttemptedRevision).toBe(ks.lastAppliedRevision);
    expect(fluxReady(ks)).toMatchObject({ status: 'True', reason: 'ReconciliationSucceeded' });

    // The Deployment runs the promoted digest, written by kustomize-controller (not by kpromo or the test).
    const d = await getDeployment(dev, GITOPS, 'web');
    expect(d.spec?.template?.spec?.containers?.[0]?.image).toBe(promoted);
    expect(d.status?.availableReplicas).toBe(1);
    const meta = (
      await dev.get<{ metadata: { labels?: Record<string, string>; managedFields?: Array<{ manager: string }> } }>(
        `/apis/apps/v1/namespaces/${GITOPS}/deployments/web`,
      )
    ).metadata;
    expect(meta.labels).toMatchObject({
      'kustomize.toolkit.fluxcd.io/name': 'web',
      'kustomize.toolkit.fluxcd.io/namespace': NS,
    });
    const managers = meta.managedFields?.map((f) => f.manager) ?? [];
    expect(managers).toContain('kustomize-controller');
    expect(managers.filter((m) => m !== 'kustomize-controller' && m !== 'kube-controller-manager')).toEqual([]);
    // The image ConfigMap is local-config: kustomize used it and did not apply it.
    expect(await dev.getOrUndefined(`/api/v1/namespaces/${GITOPS}/configmaps/web-image`)).toBeUndefined();
  });

  it('a commit Flux cannot apply leaves the workload on the old version and fails the app', async () => {
    // Someone breaks the app's manifest in the repository: the template no longer matches the selector.
    const deployment = parseYaml(appFiles('broken')['apps/broken/deployment.yaml']);
    deployment.spec.template.metadata.labels = { app: 'not-broken' };
    const breaking = pushFiles(
      gitops.repo.dir,
      { 'apps/broken/deployment.yaml': stringify(deployment) },
      'Break broken',
    );
    const rejected = await gitops.waitKustomization(
      'broken',
      'rejects the broken manifest',
      (s) => s.lastAttemptedRevision?.endsWith(breaking) === true && fluxReady(s)?.status === 'False',
    );
    expect(fluxReady(rejected)?.message).toMatch(/Deployment\/.*broken.*(invalid|does not match)/is);

    const plan = await promote('fragile', 'broken-prod');
    failed = appOf(plan, 'broken')!;
    expect(failed).toMatchObject({ phase: 'Failed', copied: true, written: true });
    expect(failed.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(plan.status?.phase).not.toBe('Complete');

    // Flux attempted kpromo's commit and refused it; what it last applied is older.
    failedKs = await gitops.waitKustomization(
      'broken',
      'attempts the promotion commit',
      (s) => s.lastAttemptedRevision === `main@sha1:${failed.commit}`,
    );
    expect(fluxReady(failedKs)).toMatchObject({ status: 'False' });
    expect(fluxReady(failedKs)?.reason).toMatch(/^(ReconciliationFailed|BuildFailed|HealthCheckFailed)$/);
    expect(failedKs.lastAppliedRevision).not.toContain(failed.commit!);
    expect((await getDeployment(dev, GITOPS, 'broken')).spec?.template?.spec?.containers?.[0]?.image).toBe(
      prodImage('broken'),
    );

    // kpromo's verdict reads the Kustomization: the app fails as soon as Flux refuses the commit,
    // with Flux's reason and a message naming the Kustomization (not at the rollout timeout).
    expect(failed.reason).toBe(fluxReady(failedKs)?.reason);
    expect(failed.message).toContain(
      `Kustomization ${NS}/broken ${failed.reason} for commit ${failed.commit!.slice(0, 12)}`,
    );
    const took = Date.parse(failed.finishedAt!) - Date.parse(failed.startedAt!);
    expect(took).toBeLessThan(30_000);
  });
});
