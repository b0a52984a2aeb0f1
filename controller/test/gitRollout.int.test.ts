import {
  type ArgoRollouts,
  type Flux,
  headCommit,
  needComponents,
  startArgoRollouts,
  startFlux,
} from '@kpromo/test-harness';
import {
  appliedCommit,
  applyCr,
  applyDeployment,
  applyDevProdEnvironments,
  appOf,
  callApi,
  controllerConfig,
  crs,
  deleteNs,
  ensureNs,
  type Gitops,
  pushTestImage,
  restFor,
  rolloutApplication,
  rolloutManifest,
  runNamespaces,
  startGitops,
  isTerminalPlan as terminal,
  waitPlan,
  withShown,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ROLLOUT, resourcePath } from '../src/kube/paths.js';
import { createLogger } from '../src/observability/logger.js';
import { type Running, startController } from '../src/runtime.js';

// Built before this file's hooks run (in the background on a fresh machine): test/cluster/need.ts.
await needComponents('argo', 'flux');

/**
 * delivery.method git into an Argo Rollout, everything real: kpromo commits to a repository served
 * over smart HTTP, Flux's source-controller and kustomize-controller (test/flux) apply it, the Argo
 * Rollouts controller (test/argo) rolls the Rollout out, kwok runs its pods. The file kpromo edits is
 * a kustomization whose `images` entry carries Flux image automation setter markers (:name, :tag,
 * :digest): kpromo writes each marked field in its marker's form and leaves every other byte alone,
 * so the same file can also be automated by Flux.
 */
const names = runNamespaces('git-ro');
const NS = names.ns; // kpromo CRs, the Flux objects, the git credentials Secret
const APPS = names.apps; // dev: the source stage (patch delivery)
const GITOPS = `${names.apps}-gitops`; // prod: only Flux writes here
const APP = 'ro';

const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const log = createLogger({ level: process.env.CTL_TEST_LOG ?? 'silent' });

const IMAGE = `${target}/prod/shop/${APP}`;
let devDigest: string;
let oldDigest: string;
const marker = (suffix: string) => `# {"$imagepolicy": "flux-system:${APP}:${suffix}"}`;
/** The kustomization kpromo edits (`images.0`), as a person wrote it for Flux image automation. */
const kustomizationYaml = () =>
  [
    '# Promotions commit the image here (kpromo delivery.git valuesPath: images.0).',
    'resources:',
    '- rollout.yaml',
    'images:',
    `- name: ${APP}-image`,
    `  newName: ${IMAGE} ${marker('name')}`,
    `  newTag: v1.1.0   ${marker('tag')}`,
    `  digest: ${oldDigest} ${marker('digest')}`,
    '',
  ].join('\n');

let flux: Flux;
let argo: ArgoRollouts;
let gitops: Gitops;
let ctl: Running;

beforeAll(async () => {
  flux = await startFlux({ kubeconfig, log: (m) => console.log(`[flux] ${m}`) });
  for (const ns of [NS, APPS, GITOPS]) await ensureNs(dev, ns);
  argo = await startArgoRollouts({ kubeconfig, namespace: GITOPS, log: (m) => console.log(`[argo] ${m}`) });

  devDigest = (await pushTestImage({ host: source, repository: `shop/${APP}`, tag: 'v1.2.0', seed: 'git-ro-new' }))
    .digest;
  oldDigest = (await pushTestImage({ host: target, repository: `prod/shop/${APP}`, tag: 'v1.1.0', seed: 'git-ro-old' }))
    .digest;
  await applyDeployment(dev, APPS, APP, `${source}/shop/${APP}:v1.2.0@${devDigest}`);

  gitops = await startGitops({
    dev,
    flux,
    ns: NS,
    files: {
      [`apps/${APP}/kustomization.yaml`]: kustomizationYaml(),
      [`apps/${APP}/rollout.yaml`]: rolloutManifest(APP, `${APP}-image`),
    },
  });
  await gitops.addApp(APP, GITOPS);
  const seed = headCommit(gitops.repo.dir);
  await gitops.waitKustomization(APP, 'applies the seed', (s) => appliedCommit(s) === seed);

  await applyDevProdEnvironments(dev, {
    ns: NS,
    apps: APPS,
    gitops: GITOPS,
    source,
    target,
    delivery: {
      method: 'git',
      git: {
        repository: gitops.url,
        branch: 'main',
        path: 'apps/{app}/kustomization.yaml',
        valuesPath: 'images.0',
        credentialsSecretRef: { name: gitops.secret },
        kustomization: { name: '{app}', namespace: NS },
      },
    },
  });
  await applyCr(
    dev,
    crs.flow(NS, 'main', ['dev', 'prod'], { selector: { applications: [APP] }, rolloutTimeoutSeconds: 150 }),
  );
  await applyCr(dev, rolloutApplication(NS, APP));

  ctl = await startController(controllerConfig(kubeconfig, NS, { leaderElection: { enabled: false } }), { log });
});

afterAll(async () => {
  await ctl?.stop();
  await gitops?.stop();
  await argo?.stop();
  for (const ns of [NS, APPS, GITOPS]) await deleteNs(dev, ns);
});

describe('git delivery into an Argo Rollout, applied by upstream Flux', () => {
  it('commits the marked image fields, Flux applies the commit and the Rollout runs the promoted digest', async () => {
    const before = gitops.repo.read(`apps/${APP}/kustomization.yaml`);
    const r = await callApi(ctl.port, '/api/v1/plans', {
      method: 'POST',
      body: await withShown(ctl.port, {
        namespace: NS,
        flow: 'main',
        from: 'dev',
        to: 'prod',
        name: 'ro-prod',
        approve: true,
      }),
    });
    expect(r.status).toBe(201);
    const plan = await waitPlan(dev, NS, 'ro-prod', terminal, 170_000);
    const a = appOf(plan, APP)!;
    expect(plan.status?.phase).toBe('Complete');
    expect(a).toMatchObject({ phase: 'Succeeded', written: true, digest: devDigest });
    expect(a.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(headCommit(gitops.repo.dir)).toBe(a.commit);

    // Only the three marked values changed, each in its marker's form; comments and spacing stay.
    expect(gitops.repo.read(`apps/${APP}/kustomization.yaml`)).toBe(
      before.replace('newTag: v1.1.0', `newTag: ${a.targetTag}`).replace(oldDigest, devDigest),
    );

    // Flux applied kpromo's commit; the Rollout (written by kustomize-controller) runs the promoted digest.
    await gitops.waitKustomization(APP, 'applies the promotion commit', (s) => appliedCommit(s) === a.commit);
    const ro = await dev.get<{
      metadata: { managedFields?: Array<{ manager: string }> };
      spec?: { template?: { spec?: { containers?: Array<{ image?: string }> } } };
      status?: { phase?: string };
    }>(resourcePath(ROLLOUT, GITOPS, APP));
    expect(ro.spec?.template?.spec?.containers?.[0]?.image).toBe(`${IMAGE}:${a.targetTag}@${devDigest}`);
    expect(ro.status?.phase).toBe('Healthy');
    expect(ro.metadata.managedFields?.map((f) => f.manager)).toContain('kustomize-controller');
  });
});
