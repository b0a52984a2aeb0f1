import type { AppProgress } from '@kpromo/api';
import {
  type ArgoRollouts,
  type Flux,
  fluxApiCrdName,
  headCommit,
  installFluxApiCrds,
  kubeConfigFor,
  needComponents,
  pushFiles,
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
  getDeployment,
  pushTestImage,
  registryDigest,
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
import { stringify } from 'yaml';
import { IMAGEPOLICY, IMAGEREPOSITORY, ROLLOUT, resourcePath } from '../src/kube/paths.js';
import { createLogger } from '../src/observability/logger.js';
import { type Running, startController } from '../src/runtime.js';

// Built before this file's hooks run (in the background on a fresh machine): test/cluster/need.ts.
await needComponents('argo', 'flux', 'flux-crds');

/**
 * delivery.method imagePolicy: kpromo only pushes the unique, sortable tag; Flux image automation
 * selects it and writes git. What is real and what the test plays:
 * - real: kpromo (copy into the target registry, the ImagePolicy verdict, the workload verdicts),
 *   the OCI registries, the kube-apiserver with the ImageRepository, ImagePolicy and
 *   ImageUpdateAutomation CRDs generated from Flux's own api modules (test/flux/apiCrds.ts), Flux's
 *   source-controller and kustomize-controller applying the repository, kube-controller-manager and
 *   kwok running Deployments, and the Argo Rollouts controller running the Rollout;
 * - played, because image-reflector-controller and image-automation-controller are not built here:
 *   the test plays image-reflector-controller by writing the ImagePolicy's status (latestRef with
 *   the tag kpromo pushed, read from the registry's tag list, and the digest the registry serves
 *   for it), and image-automation-controller by committing that ref into the files' setter markers
 *   (`# {"$imagepolicy": "<ns>:<policy>[:name|:tag|:digest]"}`, a line edit as the Setters strategy
 *   does) and pushing, which the real Flux then fetches and applies.
 */
const names = runNamespaces('imgpol');
const NS = names.ns; // kpromo CRs and the Flux objects
const APPS = names.apps; // dev: the source stage (patch delivery)
const GITOPS = `${names.apps}-gitops`; // prod: only Flux writes here

const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const log = createLogger({ level: process.env.CTL_TEST_LOG ?? 'silent' });

const OLD = 'v1.1.0';
const NEW = 'v1.2.0';
/** Apps: web (Deployment) and canary (Rollout) succeed; late is superseded; stalled and stray fail. */
const APPS_ALL = ['web', 'canary', 'late', 'stalled', 'stray'] as const;
// The target registry outlives this file and other files promote shop/web under `prod`: a prefix of
// this run's own keeps the tag lists this file reads to the tags it caused.
const PROD_PREFIX = `prod-${names.run}`;
const repoOf = (app: string) => `${PROD_PREFIX}/shop/${app}`;
const imageOf = (app: string) => `${target}/${repoOf(app)}`;
const marker = (app: string, suffix = '') => `# {"$imagepolicy": "${NS}:${app}${suffix}"}`;
const digests: Record<string, { dev: string; old: string }> = {};
const oldRef = (app: string) => `${imageOf(app)}:${OLD}@${digests[app].old}`;

/** A Deployment the way Flux's docs mark one: the full image reference, setter marker on its line. */
function deploymentFiles(app: string): Record<string, string> {
  const body = stringify({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: app, labels: { app } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app } },
      template: {
        metadata: { labels: { app } },
        spec: { tolerations: [{ operator: 'Exists' }], containers: [{ name: 'main', image: 'IMAGE' }] },
      },
    },
  });
  return {
    [`apps/${app}/kustomization.yaml`]: stringify({ resources: ['deployment.yaml'] }),
    [`apps/${app}/deployment.yaml`]: body.replace('image: IMAGE', `image: ${oldRef(app)} ${marker(app)}`),
  };
}

/** A Rollout whose image kustomize sets from an `images` entry marked :name, :tag and :digest. */
function rolloutFiles(app: string): Record<string, string> {
  return {
    [`apps/${app}/kustomization.yaml`]: [
      'resources:',
      '  - rollout.yaml',
      'images:',
      `  - name: ${app}-image`,
      `    newName: ${imageOf(app)} ${marker(app, ':name')}`,
      `    newTag: ${OLD} ${marker(app, ':tag')}`,
      `    digest: ${digests[app].old} ${marker(app, ':digest')}`,
      '',
    ].join('\n'),
    [`apps/${app}/rollout.yaml`]: rolloutManifest(app, `${app}-image`),
  };
}

interface LatestRef {
  name: string;
  tag: string;
  digest: string;
}

// A marked line: `key: value # {"$imagepolicy": "ns:policy[:field]"}` (list dash allowed).
const MARKED = /^(\s*(?:-\s+)?[A-Za-z0-9_-]+:\s+)(\S+)(\s+#\s*\{"\$imagepolicy":\s*"([^"]+)"\}\s*)$/gm;

/**
 * Plays image-automation-controller (Setters strategy): every marked field of the repository's files
 * whose policy has a latest ref gets it, in the marker's form; the changed files are committed and
 * pushed. Returns the commit (undefined when nothing changed).
 */
function playImageAutomation(files: string[], latest: Record<string, LatestRef>): string | undefined {
  const changed: Record<string, string> = {};
  for (const f of files) {
    const text = gitops.repo.read(f);
    const out = text.replace(MARKED, (line, head: string, _value: string, tail: string, setter: string) => {
      const [ns, policy, field] = setter.split(':');
      const ref = latest[`${ns}:${policy}`];
      if (!ref) return line;
      const value =
        field === 'tag'
          ? ref.tag
          : field === 'name'
            ? ref.name
            : field === 'digest'
              ? ref.digest
              : `${ref.name}:${ref.tag}@${ref.digest}`;
      return `${head}${value}${tail}`;
    });
    if (out !== text) changed[f] = out;
  }
  if (!Object.keys(changed).length) return undefined;
  return pushFiles(gitops.repo.dir, changed, `Update images (played image-automation-controller)`);
}

const condition = (type: string, status: string, reason: string, message: string) => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: new Date().toISOString(),
});

/** Plays image-reflector-controller: writes the ImagePolicy status (the status subresource). */
async function playReflector(app: string, status: Record<string, unknown>) {
  const path = resourcePath(IMAGEPOLICY, NS, app);
  const { metadata } = await dev.get<{ metadata: { generation: number } }>(path);
  await dev.request('PATCH', `${path}/status`, {
    contentType: 'application/merge-patch+json',
    body: { status: { observedGeneration: metadata.generation, ...status } },
  });
}

/** The tags the target registry lists for an app's repository. */
async function registryTags(app: string): Promise<string[]> {
  const res = await fetch(`http://${target}/v2/${repoOf(app)}/tags/list`);
  expect(res.ok).toBe(true);
  return ((await res.json()) as { tags: string[] }).tags;
}

/** Reflects the tag kpromo pushed as the policy's latest, as image-reflector-controller would after a scan. */
async function reflectPushedTag(app: string, a: AppProgress): Promise<LatestRef> {
  const pushed = (await registryTags(app)).filter((t) => t !== OLD);
  expect(pushed).toEqual([a.targetTag]);
  const digest = await registryDigest(target, repoOf(app), pushed[0]);
  expect(digest).toBe(digests[app].dev);
  const ref = { name: imageOf(app), tag: pushed[0], digest: digest! };
  await playReflector(app, {
    latestRef: ref,
    conditions: [condition('Ready', 'True', 'Succeeded', `Latest image tag for ${ref.name} resolved to ${ref.tag}`)],
  });
  return ref;
}

let flux: Flux;
let argo: ArgoRollouts;
let gitops: Gitops;
let ctl: Running;

beforeAll(async () => {
  flux = await startFlux({ kubeconfig, log: (m) => console.log(`[flux] ${m}`) });
  await installFluxApiCrds(kubeConfigFor('dev', kubeconfig), [
    'imagerepositories',
    'imagepolicies',
    'imageupdateautomations',
  ]);
  for (const ns of [NS, APPS, GITOPS]) await ensureNs(dev, ns);
  argo = await startArgoRollouts({ kubeconfig, namespace: GITOPS, log: (m) => console.log(`[argo] ${m}`) });

  for (const app of APPS_ALL) {
    digests[app] = {
      dev: (await pushTestImage({ host: source, repository: `shop/${app}`, tag: NEW, seed: `imgpol-new-${app}` }))
        .digest,
      old: (await pushTestImage({ host: target, repository: repoOf(app), tag: OLD, seed: `imgpol-old-${app}` })).digest,
    };
    await applyDeployment(dev, APPS, app, `${source}/shop/${app}:${NEW}@${digests[app].dev}`);
  }

  gitops = await startGitops({
    dev,
    flux,
    ns: NS,
    files: { ...deploymentFiles('web'), ...rolloutFiles('canary'), ...deploymentFiles('late') },
  });
  for (const app of ['web', 'canary', 'late']) await gitops.addApp(app, GITOPS);
  const seed = headCommit(gitops.repo.dir);
  for (const app of ['web', 'canary', 'late'])
    await gitops.waitKustomization(app, 'applies the seed', (s) => appliedCommit(s) === seed);

  // Flux's image automation objects, validated by the real schemas (nothing reconciles them here).
  for (const app of APPS_ALL) {
    await dev.apply(
      resourcePath(IMAGEREPOSITORY, NS, app),
      {
        apiVersion: 'image.toolkit.fluxcd.io/v1',
        kind: 'ImageRepository',
        metadata: { name: app, namespace: NS },
        // stray's policy scans another repository than the one kpromo pushes to.
        spec: { image: imageOf(app === 'stray' ? 'elsewhere' : app), interval: '1m', insecure: true },
      },
      'ctl-test',
    );
    await dev.apply(
      resourcePath(IMAGEPOLICY, NS, app),
      {
        apiVersion: 'image.toolkit.fluxcd.io/v1',
        kind: 'ImagePolicy',
        metadata: { name: app, namespace: NS },
        spec: {
          imageRepositoryRef: { name: app },
          // kpromo's default tagTemplate {version}-{timestamp} is a semver prerelease: rank those too.
          policy: { semver: { range: '>=1.0.0-0' } },
          // The committed reference must pin the digest kpromo copied (the workload verdict checks it).
          digestReflectionPolicy: 'IfNotPresent',
        },
      },
      'ctl-test',
    );
  }
  await dev.apply(
    `/apis/image.toolkit.fluxcd.io/v1/namespaces/${NS}/imageupdateautomations/apps`,
    {
      apiVersion: 'image.toolkit.fluxcd.io/v1',
      kind: 'ImageUpdateAutomation',
      metadata: { name: 'apps', namespace: NS },
      spec: {
        interval: '1m',
        sourceRef: { kind: 'GitRepository', name: 'gitops' },
        git: {
          checkout: { ref: { branch: 'main' } },
          commit: { author: { name: 'fluxcdbot', email: 'fluxcdbot@example.com' } },
          push: { branch: 'main' },
        },
        update: { path: './apps', strategy: 'Setters' },
      },
    },
    'ctl-test',
  );

  // prod: ImagePolicy <app> in NS (name defaults to {app}), in the Environment's cluster.
  await applyDevProdEnvironments(dev, {
    ns: NS,
    apps: APPS,
    gitops: GITOPS,
    source,
    target,
    delivery: { method: 'imagePolicy', imagePolicy: { namespace: NS } },
    prefix: PROD_PREFIX,
  });
  const flow = (name: string, apps: string[], rolloutTimeoutSeconds: number) =>
    applyCr(dev, crs.flow(NS, name, ['dev', 'prod'], { selector: { applications: apps }, rolloutTimeoutSeconds }));
  await flow('main', ['web', 'canary'], 150);
  await flow('race', ['late'], 120);
  await flow('broken', ['stalled', 'stray'], 60);
  for (const app of APPS_ALL)
    await applyCr(dev, app === 'canary' ? rolloutApplication(NS, app) : crs.application(NS, app, 'team-a'));

  ctl = await startController(controllerConfig(kubeconfig, NS, { leaderElection: { enabled: false } }), { log });
});

afterAll(async () => {
  await ctl?.stop();
  for (const app of APPS_ALL) {
    await dev.delete(resourcePath(IMAGEPOLICY, NS, app)).catch(() => undefined);
    await dev.delete(resourcePath(IMAGEREPOSITORY, NS, app)).catch(() => undefined);
  }
  await gitops?.stop();
  await argo?.stop();
  for (const ns of [NS, APPS, GITOPS]) await deleteNs(dev, ns);
});

async function startPlan(flow: string, name: string) {
  const r = await callApi(ctl.port, '/api/v1/plans', {
    method: 'POST',
    body: await withShown(ctl.port, { namespace: NS, flow, from: 'dev', to: 'prod', name, approve: true }),
  });
  expect(r.status).toBe(201);
}

/** Waits until every named app waits on its ImagePolicy (kpromo pushed the tag and judges the policy). */
const waitingOnPolicy = (name: string, apps: string[]) =>
  waitPlan(dev, NS, name, (p) =>
    apps.every((a) => {
      const ap = appOf(p, a);
      return ap?.phase === 'RollingOut' && /waiting for ImagePolicy/.test(ap.message ?? '');
    }),
  );

const podImage = (w: { spec?: { template?: { spec?: { containers?: Array<{ image?: string }> } } } }) =>
  w.spec?.template?.spec?.containers?.[0]?.image;

describe('imagePolicy delivery: kpromo pushes the tag, Flux image automation deploys it', () => {
  it('the ImageRepository, ImagePolicy and ImageUpdateAutomation CRDs serve v1 and enforce their schema', async () => {
    for (const crd of ['imagerepositories', 'imagepolicies', 'imageupdateautomations'] as const) {
      const c = await dev.get<{ spec: { versions: Array<{ name: string; served: boolean }> } }>(
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${fluxApiCrdName(crd)}`,
      );
      expect(c.spec.versions.find((v) => v.name === 'v1')?.served).toBe(true);
    }
    // The schema is enforced: a policy without its required imageRepositoryRef is refused.
    await expect(
      dev.apply(
        resourcePath(IMAGEPOLICY, NS, 'invalid'),
        {
          apiVersion: 'image.toolkit.fluxcd.io/v1',
          kind: 'ImagePolicy',
          metadata: { name: 'invalid' },
          spec: { policy: {} },
        },
        'ctl-test',
      ),
    ).rejects.toThrow(/imageRepositoryRef/);
  });

  it('a Deployment and a Rollout run the pushed tag once the policy selects it and Flux applies the commit', async () => {
    const before = headCommit(gitops.repo.dir);
    await startPlan('main', 'main-prod');
    let plan = await waitingOnPolicy('main-prod', ['web', 'canary']);
    // kpromo copied the image and wrote nothing: no commit, the workloads still on the old version.
    expect(appOf(plan, 'web')).toMatchObject({ copied: true, written: true, digest: digests.web.dev });
    expect(appOf(plan, 'web')?.commit).toBeUndefined();
    expect(headCommit(gitops.repo.dir)).toBe(before);
    expect(podImage(await getDeployment(dev, GITOPS, 'web'))).toBe(oldRef('web'));

    // image-reflector-controller (played) selects the pushed tags.
    const latest: Record<string, LatestRef> = {};
    for (const app of ['web', 'canary']) latest[`${NS}:${app}`] = await reflectPushedTag(app, appOf(plan, app)!);
    // The policy selects the tag, but the workloads do not run it yet: the plan keeps waiting.
    plan = await waitPlan(dev, NS, 'main-prod', (p) =>
      ['web', 'canary'].every((a) => {
        const ap = appOf(p, a);
        return ap?.phase === 'RollingOut' && !!ap.message && !ap.message.includes('ImagePolicy');
      }),
    );
    expect(plan.status?.phase).toBe('Promoting');

    // image-automation-controller (played) commits the selected refs at the setter markers.
    const files = ['apps/web/deployment.yaml', 'apps/canary/kustomization.yaml'];
    const commit = playImageAutomation(files, latest);
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    const web = latest[`${NS}:web`];
    const canary = latest[`${NS}:canary`];
    expect(gitops.repo.read('apps/web/deployment.yaml')).toContain(
      `image: ${web.name}:${web.tag}@${web.digest} ${marker('web')}`,
    );
    expect(gitops.repo.read('apps/canary/kustomization.yaml')).toContain(
      `newTag: ${canary.tag} ${marker('canary', ':tag')}`,
    );

    plan = await waitPlan(dev, NS, 'main-prod', terminal, 150_000);
    expect(plan.status?.phase).toBe('Complete');
    for (const app of ['web', 'canary'])
      expect(appOf(plan, app)).toMatchObject({ phase: 'Succeeded', targetTag: latest[`${NS}:${app}`].tag });

    // The real kustomize-controller applied the played commit; the workloads run the pushed digest.
    for (const app of ['web', 'canary'])
      await gitops.waitKustomization(app, 'applies the image automation commit', (s) => appliedCommit(s) === commit);
    expect(podImage(await getDeployment(dev, GITOPS, 'web'))).toBe(`${web.name}:${web.tag}@${web.digest}`);
    const rollout = await dev.get<{
      spec?: { template?: { spec?: { containers?: Array<{ image?: string }> } } };
      status?: { phase?: string };
    }>(resourcePath(ROLLOUT, GITOPS, 'canary'));
    expect(podImage(rollout)).toBe(`${canary.name}:${canary.tag}@${canary.digest}`);
    expect(rollout.status?.phase).toBe('Healthy');
  });

  it("fails the app when the policy selects a newer release than kpromo's, leaving the workload alone", async () => {
    await startPlan('race', 'late-prod');
    const plan = await waitingOnPolicy('late-prod', ['late']);
    const ours = appOf(plan, 'late')!;
    // Someone else's release lands in the repository and ranks above kpromo's tag.
    const theirs = 'v9.0.0';
    const digest = (
      await pushTestImage({ host: target, repository: repoOf('late'), tag: theirs, seed: 'imgpol-theirs-late' })
    ).digest;
    await playReflector('late', {
      latestRef: { name: imageOf('late'), tag: theirs, digest },
      conditions: [
        condition('Ready', 'True', 'Succeeded', `Latest image tag for ${imageOf('late')} resolved to ${theirs}`),
      ],
    });
    const done = await waitPlan(dev, NS, 'late-prod', terminal, 60_000);
    const a = appOf(done, 'late')!;
    expect(a).toMatchObject({ phase: 'Failed', reason: 'Superseded', written: true });
    expect(a.message).toBe(
      `ImagePolicy ${NS}/late selects ${theirs}, which ranks above ${ours.targetTag} by its policy: a newer release won, and Flux will not deploy ${ours.targetTag}`,
    );
    expect(podImage(await getDeployment(dev, GITOPS, 'late'))).toBe(oldRef('late'));
  });

  it("fails with Flux's reason when the policy is stalled, and at delivery when it scans another repository", async () => {
    await playReflector('stalled', {
      conditions: [
        condition('Ready', 'False', 'InvalidPolicy', 'invalid semver range "~>"'),
        condition('Stalled', 'True', 'InvalidPolicy', 'invalid semver range "~>"'),
      ],
    });
    await startPlan('broken', 'broken-prod');
    const plan = await waitPlan(dev, NS, 'broken-prod', terminal, 60_000);
    expect(appOf(plan, 'stalled')).toMatchObject({
      phase: 'Failed',
      reason: 'InvalidPolicy',
      written: true,
      message: `ImagePolicy ${NS}/stalled InvalidPolicy: invalid semver range "~>"`,
    });
    // stray: refused before the rollout, naming both Flux objects and the repository kpromo pushes to.
    const stray = appOf(plan, 'stray')!;
    expect(stray).toMatchObject({ phase: 'Failed', reason: 'ImagePolicyMismatch', copied: true });
    expect(stray.written).not.toBe(true);
    expect(stray.message).toBe(
      `ImagePolicy ${NS}/stray selects from ImageRepository ${NS}/stray, which scans ${imageOf('elsewhere')}, not ${imageOf('stray')} where kpromo pushes this Application's tags (in cluster dev)`,
    );
  });
});
