// `kpromo adopt` on the local control plane: a mixed estate in dev and stable (Deployments, a
// StatefulSet, a CronJob with a Job it created, two Deployments sharing an image, a public image
// from another registry), scanned with the harness kubeconfig; the proposal is applied through the
// real apiserver (dry run first), a second run proposes nothing, and a real controller promotes
// through what adopt created. The program runs in-process (buildProgram), as main.ts runs it.
// Delivery inference reads real Flux objects (Kustomization with its GitRepository, HelmRelease,
// ImagePolicy with its ImageRepository; their CRDs only, no Flux controller runs).
import type { Application, Environment, PromotionFlow } from '@kpromo/api';
import { type Running, startController } from '@kpromo/controller';
import {
  applyCrds,
  ensureFluxBinaries,
  gitRepository,
  installFluxApiCrds,
  installFluxCrds,
  kubeConfigFor,
  kustomization,
  needComponents,
  waitFor,
} from '@kpromo/test-harness';
import {
  applyDeployment,
  applyHelmRelease,
  controllerConfig,
  deleteNs,
  deploymentImage,
  ensureNs,
  pushTestImage,
  restFor,
  waitReady,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { EXIT } from '../src/exitCodes.js';
import { runKpromo } from './inProcess.js';

// The Flux delivery inference reads real Kustomization, GitRepository, HelmRelease and ImagePolicy
// objects: their CRDs come from Flux's modules.
await needComponents('flux', 'flux-crds');

const RUN = Math.random().toString(36).slice(2, 7);
const NS = `adopt-${RUN}`;
const APPS_NS = `adopt-apps-${RUN}`;
const REPO = `adopt${RUN}`;
const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const stable = restFor(kubeconfig, 'stable');
const GROUP = 'promotions.kpromo.dev';
const digests: Record<string, { dev: string; stable: string }> = {};
let ctl: Running | undefined;

/** `kpromo` in-process with the test kubeconfig. */
const kpromo = (args: string[]) => runKpromo(['--kubeconfig', kubeconfig, ...args]);

const workload = (kind: 'StatefulSet' | 'CronJob', name: string, image: string, labels: Record<string, string>) => {
  const pod = {
    metadata: { labels: { app: name } },
    spec: { tolerations: [{ operator: 'Exists' }], containers: [{ name: 'main', image }] },
  };
  return kind === 'StatefulSet'
    ? {
        apiVersion: 'apps/v1',
        kind,
        metadata: { name, namespace: APPS_NS, labels },
        spec: { serviceName: name, replicas: 1, selector: { matchLabels: { app: name } }, template: pod },
      }
    : {
        apiVersion: 'batch/v1',
        kind,
        metadata: { name, namespace: APPS_NS, labels },
        spec: {
          schedule: '0 0 1 1 *',
          suspend: true,
          jobTemplate: { spec: { template: { ...pod, spec: { ...pod.spec, restartPolicy: 'Never' } } } },
        },
      };
};

beforeAll(async () => {
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  await ensureNs(dev, NS);
  for (const c of [dev, stable]) await ensureNs(c, APPS_NS);
  for (const app of ['cart', 'web', 'report']) {
    digests[app] = {
      dev: (await pushTestImage({ host: source, repository: `${REPO}/${app}`, tag: 'v2.0.0', seed: `${RUN}-${app}-2` }))
        .digest,
      stable: (
        await pushTestImage({
          host: target,
          repository: `stable/${REPO}/${app}`,
          tag: 'v1.0.0',
          seed: `${RUN}-${app}-1`,
        })
      ).digest,
    };
  }
  const img = (env: 'dev' | 'stable', app: string) =>
    env === 'dev'
      ? `${source}/${REPO}/${app}:v2.0.0@${digests[app].dev}`
      : `${target}/stable/${REPO}/${app}:v1.0.0@${digests[app].stable}`;
  for (const [rest, env] of [
    [dev, 'dev'],
    [stable, 'stable'],
  ] as const) {
    // cart: an API and a worker running the same image, owned by team-cart.
    for (const name of ['cart', 'cart-worker']) {
      await applyDeployment(rest, APPS_NS, name, img(env, 'cart'));
      await rest.mergePatch(`/apis/apps/v1/namespaces/${APPS_NS}/deployments/${name}`, {
        metadata: { labels: { team: 'team-cart', 'app.kubernetes.io/name': 'cart' } },
      });
    }
    await rest.create(
      `/apis/apps/v1/namespaces/${APPS_NS}/statefulsets`,
      workload('StatefulSet', 'web', img(env, 'web'), { team: 'team-web' }),
    );
    await rest.create(
      `/apis/batch/v1/namespaces/${APPS_NS}/cronjobs`,
      workload('CronJob', 'report', img(env, 'report'), {}),
    );
  }
  // dev also runs a public image, and a Job its CronJob created.
  await applyDeployment(dev, APPS_NS, 'cache', 'docker.io/library/redis:7.4');
  const cron = await dev.get<{ metadata: { uid: string } }>(`/apis/batch/v1/namespaces/${APPS_NS}/cronjobs/report`);
  await dev.create(`/apis/batch/v1/namespaces/${APPS_NS}/jobs`, {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: 'report-manual',
      namespace: APPS_NS,
      ownerReferences: [
        { apiVersion: 'batch/v1', kind: 'CronJob', name: 'report', uid: cron.metadata.uid, controller: true },
      ],
    },
    spec: {
      suspend: true,
      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: img('dev', 'report') }] } },
    },
  });
  for (const name of ['cart', 'cart-worker']) await waitReady(dev, APPS_NS, name);
}, 240_000);

afterAll(async () => {
  await ctl?.stop().catch(() => undefined);
  await deleteNs(dev, NS);
  for (const c of [dev, stable]) await deleteNs(c, APPS_NS);
});

describe('kpromo adopt', () => {
  const envs = ['--env', `dev=dev/${APPS_NS}`, '--env', `stable=stable/${APPS_NS}`];

  it('proposes Applications, Environments and a flow the apiserver accepts, and reports what it could not decide', async () => {
    const r = await kpromo(['adopt', '-n', NS, ...envs, '--owner', 'platform']);
    expect(r.code, r.err).toBe(EXIT.OK);
    const docs = parseAllDocuments(r.out).map((d) => d.toJS()) as Array<Application | Environment | PromotionFlow>;
    const byKind = (k: string) => docs.filter((d) => d.kind === k);
    expect(byKind('Application').map((a) => [a.metadata.name, (a as Application).spec])).toEqual([
      [
        'cart',
        {
          owner: 'team-cart',
          type: 'service',
          image: { repository: `${REPO}/cart` },
          workloads: [
            { kind: 'Deployment', name: 'cart' },
            { kind: 'Deployment', name: 'cart-worker' },
          ],
        },
      ],
      [
        'report',
        {
          owner: 'platform',
          type: 'job',
          image: { repository: `${REPO}/report` },
          workloads: [{ kind: 'CronJob', name: 'report' }],
        },
      ],
      [
        'web',
        {
          owner: 'team-web',
          type: 'service',
          image: { repository: `${REPO}/web` },
          workloads: [{ kind: 'StatefulSet', name: 'web' }],
        },
      ],
    ]);
    expect(byKind('Environment').map((e) => (e as Environment).spec)).toEqual([
      {
        cluster: { context: 'dev' },
        namespace: APPS_NS,
        registry: { host: source, insecure: true },
        delivery: { method: 'patch' },
      },
      {
        cluster: { context: 'stable' },
        namespace: APPS_NS,
        registry: { host: target, prefix: 'stable', insecure: true },
        delivery: { method: 'patch' },
      },
    ]);
    expect((byKind('PromotionFlow')[0] as PromotionFlow).spec.stages).toEqual([
      { environment: 'dev' },
      { environment: 'stable' },
    ]);
    expect(r.err).toContain(
      `undecided  Deployment dev/cache: container main runs docker.io/library/redis, not from ${source}`,
    );
    expect(r.err).toContain('note  Job dev/report-manual: skipped: created by CronJob/report');
    expect(r.err).toContain('note  Application cart: cart, cart-worker run the same image');
    expect(r.err).toContain('6 resource(s) proposed');
  });

  it('--apply writes them as the caller after a dry run; a second run proposes nothing', async () => {
    const applied = await kpromo(['adopt', '-n', NS, ...envs, '--owner', 'platform', '--apply']);
    expect(applied.code, applied.err).toBe(EXIT.OK);
    expect(applied.err).toContain(
      `applied in ${NS}: Environment/dev, Environment/stable, Application/cart, Application/report, Application/web, PromotionFlow/main`,
    );
    const apps = await dev.get<{ items: Application[] }>(`/apis/${GROUP}/v1alpha1/namespaces/${NS}/applications`);
    expect(apps.items.map((a) => a.metadata.name)).toEqual(['cart', 'report', 'web']);
    const again = await kpromo(['adopt', '-n', NS, ...envs, '--owner', 'platform']);
    expect(again.code, again.err).toBe(EXIT.OK);
    expect(again.out).toBe('');
    expect(again.err).toContain('nothing to propose: everything found is already adopted');
    // Without --env: the namespace's Environments, in its flow's order.
    const fromEnvs = await kpromo(['adopt', '-n', NS, '--owner', 'platform']);
    expect(fromEnvs.err).toContain('nothing to propose');
    // A service deployed since: only its Application is proposed, with the flow's selector gaining it
    // (governed); the Environments and their registries are kept as they are.
    for (const app of ['search', 'billing']) {
      await applyDeployment(dev, APPS_NS, app, `${source}/${REPO}/${app}:v2.0.0`);
      await applyDeployment(stable, APPS_NS, app, `${target}/stable/${REPO}/${app}:v1.0.0`);
    }
    // --apps chooses among them (as the portal's Onboarding does): billing waits for later.
    const grown = await kpromo(['adopt', '-n', NS, '--owner', 'platform', '--apps', 'search']);
    expect(grown.code, grown.err).toBe(EXIT.OK);
    const proposed = parseAllDocuments(grown.out).map((d) => d.toJS()) as Array<Application | PromotionFlow>;
    expect(proposed.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual(['Application/search', 'PromotionFlow/main']);
    expect((proposed[1] as PromotionFlow).spec.selector).toEqual({ applications: ['cart', 'report', 'web', 'search'] });
    expect(grown.err).toContain('selector.applications gains search: a governed change');
    const withEnv = await kpromo(['adopt', '-n', NS, ...envs, '--apps', 'search']);
    expect(withEnv.code).toBe(EXIT.USAGE);
    expect(withEnv.err).toContain('--apps chooses among what an existing flow would adopt (without --env)');
    for (const c of [dev, stable])
      for (const app of ['search', 'billing']) await c.delete(`/apis/apps/v1/namespaces/${APPS_NS}/deployments/${app}`);
    // With two flows and no --flow naming one of them, it does not guess the order.
    await dev.create(`/apis/${GROUP}/v1alpha1/namespaces/${NS}/promotionflows`, {
      apiVersion: `${GROUP}/v1alpha1`,
      kind: 'PromotionFlow',
      metadata: { name: 'reverse', namespace: NS },
      spec: { stages: [{ environment: 'stable' }, { environment: 'dev' }], selector: { applications: ['none'] } },
    });
    const ambiguous = await kpromo(['adopt', '-n', NS, '--owner', 'platform', '--flow', 'other']);
    expect(ambiguous.code).toBe(EXIT.USAGE);
    expect(ambiguous.err).toContain(`namespace ${NS} has 2 PromotionFlows (main, reverse): pass --flow NAME`);
    const named = await kpromo(['adopt', '-n', NS, '--owner', 'platform', '--flow', 'main']);
    expect(named.err).toContain('nothing to propose');
    await dev.delete(`/apis/${GROUP}/v1alpha1/namespaces/${NS}/promotionflows/reverse`);
  });

  it('a controller promotes through what adopt created', async () => {
    ctl = await startController(controllerConfig(kubeconfig, NS, { leaderElection: { enabled: false } }));
    await waitFor(
      'environments synced',
      async () => {
        const es = ctl!.controller.cache.environments(NS);
        return es.length === 2 && es.every((e) => ctl!.controller.cache.environmentSynced(e));
      },
      60_000,
    );
    const r = await kpromo([
      'plan',
      'create',
      'dev',
      'stable',
      '-n',
      NS,
      '--name',
      'first',
      '--apps',
      'cart',
      '--approve',
      '--expect',
      `cart=${digests.cart.dev}`,
      '-w',
      '--timeout',
      '3m',
    ]);
    expect(r.code, `${r.out}\n${r.err}`).toBe(EXIT.OK);
    for (const name of ['cart', 'cart-worker'])
      expect(await deploymentImage(stable, APPS_NS, name)).toContain(digests.cart.dev);
  });

  it('infers git, helmRelease and imagePolicy delivery from real Flux objects (Kustomization with its GitRepository, HelmRelease values, ImagePolicy scanning the image)', async () => {
    // A second estate: web in dev, applied in qa by a Flux Kustomization from a GitRepository, run
    // in prod by Flux's helm-controller (labels and a HelmRelease whose values hold the running tag),
    // and in stable selected by a Flux ImagePolicy. The Flux CRDs are the real ones (shipped in
    // Flux's modules); their controllers are not running (adopt reads objects, nothing more).
    const NS2 = `adopt-flux-${RUN}`;
    const QA = `adopt-qa-${RUN}`;
    await installFluxCrds(kubeConfigFor('dev', kubeconfig), ensureFluxBinaries().crds);
    await ensureNs(dev, QA);
    await applyDeployment(dev, QA, 'web', `${source}/qa/${REPO}/web:v1.5.0`);
    await dev.mergePatch(`/apis/apps/v1/namespaces/${QA}/deployments/web`, {
      metadata: { labels: { 'kustomize.toolkit.fluxcd.io/name': 'apps', 'kustomize.toolkit.fluxcd.io/namespace': QA } },
    });
    await dev.create(
      `/apis/source.toolkit.fluxcd.io/v1/namespaces/${QA}/gitrepositories`,
      gitRepository({
        namespace: QA,
        name: 'gitops',
        url: 'https://git.example.com/shop/gitops.git',
        branch: 'release',
      }),
    );
    await dev.create(
      `/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/${QA}/kustomizations`,
      kustomization({ namespace: QA, name: 'apps', source: 'gitops', path: './clusters/qa', targetNamespace: QA }),
    );
    const prod = restFor(kubeconfig, 'prod');
    await installFluxApiCrds(kubeConfigFor('prod', kubeconfig), ['helmreleases']);
    await installFluxApiCrds(kubeConfigFor('stable', kubeconfig), ['imagerepositories', 'imagepolicies']);
    await ensureNs(dev, NS2);
    for (const c of [stable, prod]) await ensureNs(c, NS2);
    await applyDeployment(dev, NS2, 'web', `${source}/${REPO}/web:v2.0.0@${digests.web.dev}`);
    await applyDeployment(stable, NS2, 'web', `${target}/stable/${REPO}/web:v1.0.0@${digests.web.stable}`);
    await applyDeployment(prod, NS2, 'web', `${target}/prod/${REPO}/web:v0.9.0`);
    await prod.mergePatch(`/apis/apps/v1/namespaces/${NS2}/deployments/web`, {
      metadata: { labels: { 'helm.toolkit.fluxcd.io/name': 'web', 'helm.toolkit.fluxcd.io/namespace': NS2 } },
    });
    await applyHelmRelease(prod, NS2, 'web', { image: { repository: `${target}/prod/${REPO}/web`, tag: 'v0.9.0' } });
    await stable.create(`/apis/image.toolkit.fluxcd.io/v1/namespaces/${NS2}/imagerepositories`, {
      apiVersion: 'image.toolkit.fluxcd.io/v1',
      kind: 'ImageRepository',
      metadata: { name: 'web', namespace: NS2 },
      spec: { image: `${target}/stable/${REPO}/web`, interval: '5m' },
    });
    await stable.create(`/apis/image.toolkit.fluxcd.io/v1/namespaces/${NS2}/imagepolicies`, {
      apiVersion: 'image.toolkit.fluxcd.io/v1',
      kind: 'ImagePolicy',
      metadata: { name: 'web', namespace: NS2 },
      spec: { imageRepositoryRef: { name: 'web' }, policy: { semver: { range: '>=1.0.0' } } },
    });
    try {
      const r = await kpromo([
        'adopt',
        '-n',
        NS2,
        '--env',
        `dev=dev/${NS2}`,
        '--env',
        `qa=dev/${QA}`,
        '--env',
        `stable=stable/${NS2}`,
        '--env',
        `prod=prod/${NS2}`,
        '--owner',
        'team-web',
      ]);
      expect(r.code, r.err).toBe(EXIT.OK);
      const docs = parseAllDocuments(r.out).map((d) => d.toJS()) as Array<Environment>;
      const delivery = Object.fromEntries(
        docs.filter((d) => d.kind === 'Environment').map((e) => [e.metadata.name, e.spec.delivery]),
      );
      expect(delivery).toEqual({
        dev: { method: 'patch' },
        qa: {
          method: 'git',
          git: {
            repository: 'https://git.example.com/shop/gitops.git',
            branch: 'release',
            path: 'clusters/qa/{app}.yaml',
            kustomization: { name: 'apps', namespace: QA },
          },
        },
        stable: { method: 'imagePolicy', imagePolicy: { name: '{app}', namespace: NS2 } },
        prod: { method: 'helmRelease', helmRelease: { name: '{app}', valuesPath: 'image.tag' } },
      });
      expect(docs.find((d) => d.metadata.name === 'prod')?.spec.registry).toEqual({
        host: target,
        prefix: 'prod',
        insecure: true,
      });
      // The file path is a guess from the Kustomization's path: it is flagged for review.
      expect(r.err).toContain(
        `undecided  Environment qa: applied by Flux Kustomization ${QA}/apps from https://git.example.com/shop/gitops.git: check delivery.git.path`,
      );
    } finally {
      for (const ns of [NS2, QA]) await deleteNs(dev, ns);
      for (const c of [stable, prod]) await deleteNs(c, NS2);
    }
  });

  it('refuses a malformed --env with a usage error', async () => {
    const r = await kpromo(['adopt', '-n', NS, '--env', 'Prod=ctx']);
    expect(r.code).toBe(EXIT.USAGE);
    expect(r.err).toContain('--env "Prod=ctx" must be NAME=CONTEXT[/NAMESPACE]');
    const ctx = await kpromo(['adopt', '-n', NS, '--env', 'dev=nowhere', '--env', 'stable=stable']);
    expect(ctx.code).toBe(EXIT.USAGE);
    expect(ctx.err).toContain('the kubeconfig has no context "nowhere"');
  });
});
