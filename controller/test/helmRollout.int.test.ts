import { type ArgoRollouts, needComponents, startArgoRollouts, waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  applyHelmRelease,
  appOf,
  callApi,
  controllerConfig,
  crs,
  deleteHelmReleaseCrd,
  deleteNamespaces,
  ensureHelmReleaseCrd,
  getPlan,
  playHelmController,
  pushTestImage,
  registryDigest,
  restFor,
  rolloutApplication,
  runNamespaces,
  setupNamespaces,
  isTerminalPlan as terminal,
  waitPlan,
  waitReady,
  withShown,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HELMRELEASE, ROLLOUT, resourcePath } from '../src/kube/paths.js';
import { createLogger } from '../src/observability/logger.js';
import type { Rollout } from '../src/rollout/kinds/rollout.js';
import { type Running, startController } from '../src/runtime.js';

// Built before this file's hooks run (in the background on a fresh machine): test/cluster/need.ts.
await needComponents('helm', 'argo', 'flux-crds');

/**
 * delivery.method helmRelease into an Argo Rollout.
 *
 * Real: kpromo; the OCI registries; the clusters (kube-apiserver, kube-controller-manager, kwok
 * making the pods Ready); the Argo Rollouts controller (test/argo), running against `prod`, which
 * rolls the Rollout out; the HelmRelease CRD, generated from helm-controller's api module
 * (test/flux/apiCrds.ts), so every HelmRelease write, kpromo's merge patch included, is checked by
 * the real v2 schema.
 *
 * Played: Flux's helm-controller, which cannot be built here. The test plays it with
 * playHelmController (@kpromo/test-harness/controller): it renders `values.image` into the Rollout of the same name, as
 * the chart would (canary steps from `values.canary.steps`), then writes the HelmRelease status as
 * helm-controller does. No Helm release is installed and no chart is fetched.
 *
 * kpromo's verdict needs both gates: the HelmRelease (Ready and a `deployed` release for the current
 * generation) and then the Rollout's health as Argo Rollouts reports it.
 */
const names = runNamespaces('hr-ro');
const { ns: NS, apps: APPS } = names;
const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const prod = restFor(kubeconfig, 'prod');
const log = createLogger({ level: process.env.CTL_TEST_LOG ?? 'silent' });

/** web: canary with a pause step, released; api: no steps, its Helm upgrade fails after applying. */
const STEPS: Record<string, unknown[]> = { web: [{ setWeight: 50 }, { pause: {} }], api: [] };
const APP_NAMES = Object.keys(STEPS);
const HOOK_ERROR = 'post-upgrade hooks failed: job api-smoke-test failed: BackoffLimitExceeded';
const repo = (app: string) => `${target}/hr/shop/${app}`;
const digests: Record<string, string> = {};
let argo: ArgoRollouts;
let ctl: Running;
let createdCrd = false;

const getRollout = (app: string) => prod.get<Rollout>(resourcePath(ROLLOUT, APPS, app));
const rolloutImage = (r: Rollout) => r.spec?.template?.spec?.containers?.[0]?.image;
const observed = (r: Rollout) => String(r.status?.observedGeneration ?? '') === String(r.metadata.generation);

/** Waits until Argo Rollouts reports the Rollout Healthy on `image` for its current generation. */
const waitRolloutHealthy = (app: string, image: string, timeoutMs = 90_000) =>
  waitFor(
    `Rollout ${APPS}/${app} Healthy on ${image}`,
    async () => {
      const r = await getRollout(app);
      return observed(r) && r.status?.phase === 'Healthy' && rolloutImage(r) === image ? r : undefined;
    },
    timeoutMs,
    500,
  );

type HelmReleaseView = {
  metadata: { generation: number };
  spec: { values: { image: Record<string, string>; canary?: unknown } };
  status?: {
    conditions?: Array<{ type: string; status: string; reason: string; observedGeneration: number }>;
    history?: Array<{ status: string }>;
  };
};
const getHelmRelease = (app: string) => prod.get<HelmReleaseView>(resourcePath(HELMRELEASE, APPS, app));

/** Waits until kpromo wrote its plan's values into the HelmRelease (generation 2). */
const waitValuesWritten = (app: string) =>
  waitFor(`kpromo's values in HelmRelease ${app}`, async () => {
    const hr = await getHelmRelease(app);
    return hr.metadata.generation === 2 ? hr : undefined;
  });

/** `kubectl argo rollouts promote`: a merge patch of the Rollout's status subresource. */
const promoteRollout = (app: string) =>
  prod.mergePatch(`${resourcePath(ROLLOUT, APPS, app)}/status`, { status: { pauseConditions: null } });

const startPlan = async (app: string) => {
  const r = await callApi(ctl.port, '/api/v1/plans', {
    method: 'POST',
    body: await withShown(ctl.port, {
      namespace: NS,
      flow: app,
      from: 'dev',
      to: 'prod',
      name: `${app}-prod`,
      approve: true,
    }),
  });
  expect(r.status).toBe(201);
};

beforeAll(async () => {
  createdCrd = await ensureHelmReleaseCrd(prod);
  await setupNamespaces(dev, [dev, prod], names);
  // The real Argo Rollouts controller against prod, namespaced to APPS (installs its CRDs there).
  argo = await startArgoRollouts({
    kubeconfig,
    context: 'prod',
    namespace: APPS,
    log: (m) => console.log(`[argo] ${m}`),
  });

  for (const app of APP_NAMES) {
    digests[app] = (
      await pushTestImage({ host: source, repository: `shop/${app}`, tag: 'v2.0.0', seed: `hr-ro-${app}` })
    ).digest;
    await applyDeployment(dev, APPS, app, `${source}/shop/${app}:v2.0.0@${digests[app]}`);
    await applyHelmRelease(prod, APPS, app, {
      image: { repository: repo(app), tag: 'v1.0.0' },
      canary: { steps: STEPS[app] },
    });
    // "helm-controller" installs the release; retried while the fresh Rollout CRD is not served for writes.
    await waitFor(`install of ${app}`, () =>
      playHelmController(prod, APPS, app, { released: true }, { render: 'Rollout' }),
    );
  }
  for (const app of APP_NAMES) {
    await waitReady(dev, APPS, app);
    await waitRolloutHealthy(app, `${repo(app)}:v1.0.0`);
  }

  await applyCr(
    dev,
    crs.environment(NS, 'dev', {
      context: 'dev',
      namespace: APPS,
      registry: { host: source, insecure: true },
      delivery: { method: 'patch' },
    }),
  );
  await applyCr(
    dev,
    crs.environment(NS, 'prod', {
      context: 'prod',
      namespace: APPS,
      registry: { host: target, prefix: 'hr', insecure: true },
      delivery: {
        method: 'helmRelease',
        helmRelease: { name: '{app}', valuesPath: 'image.tag', digestPath: 'image.digest' },
      },
    }),
  );
  for (const app of APP_NAMES) {
    await applyCr(
      dev,
      crs.flow(NS, app, ['dev', 'prod'], { selector: { applications: [app] }, rolloutTimeoutSeconds: 150 }),
    );
    await applyCr(dev, rolloutApplication(NS, app));
  }
  ctl = await startController(controllerConfig(kubeconfig, NS, { leaderElection: { enabled: false } }), { log });
}, 600_000);

afterAll(async () => {
  await ctl?.stop().catch(() => undefined);
  await argo?.stop().catch(() => undefined);
  await deleteNamespaces(dev, [dev, prod], names);
  if (createdCrd) await deleteHelmReleaseCrd(prod);
});

describe('helmRelease delivery into an Argo Rollout (helm-controller played, Argo Rollouts real)', () => {
  it('succeeds only once the HelmRelease is released and the canary Rollout is healthy on the promoted digest', async () => {
    await startPlan('web');
    const written = await waitValuesWritten('web');
    const tag = appOf(await getPlan(dev, NS, 'web-prod'), 'web')?.targetTag;
    expect(tag).toBeDefined();
    // kpromo's merge patch set the tag and digest only; the chart's other values stay.
    expect(written.spec.values).toEqual({
      image: { repository: repo('web'), tag, digest: digests.web },
      canary: { steps: STEPS.web },
    });
    const image = `${repo('web')}:${tag}@${digests.web}`;

    // helm-controller releases generation 2: the chart renders the Rollout, Argo starts the canary.
    expect(await playHelmController(prod, APPS, 'web', { released: true }, { render: 'Rollout' })).toBe(true);

    // The HelmRelease gate passed; the Rollout gate holds the app at the canary's pause.
    const paused = await waitPlan(dev, NS, 'web-prod', (p) => !!appOf(p, 'web')?.message?.startsWith('Paused:'));
    expect(paused.status?.phase).toBe('Promoting');
    expect(appOf(paused, 'web')).toMatchObject({ phase: 'RollingOut', written: true });
    expect(appOf(paused, 'web')?.message).toMatch(
      /^Paused: web: Rollout is paused \(CanaryPauseStep at step 2 of 2\); promote it to continue/,
    );
    const hr = await getHelmRelease('web');
    expect(hr.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      reason: 'UpgradeSucceeded',
      observedGeneration: 2,
    });
    const canary = await getRollout('web');
    expect(rolloutImage(canary)).toBe(image);
    expect(canary.status?.stableRS).not.toBe(canary.status?.currentPodHash);

    await promoteRollout('web');
    const plan = await waitPlan(dev, NS, 'web-prod', terminal, 150_000);
    expect(plan.status?.phase).toBe('Complete');
    expect(appOf(plan, 'web')).toMatchObject({
      phase: 'Succeeded',
      reason: 'RolloutComplete',
      message: 'web ready in prod',
      targetTag: tag,
      digest: digests.web,
      previous: { tag: 'v1.0.0' },
    });
    // The promoted digest is in the prod registry under the tag, and the Rollout runs it, fully promoted.
    expect(await registryDigest(target, 'hr/shop/web', tag!)).toBe(digests.web);
    const done = await waitRolloutHealthy('web', image);
    expect(done.status?.stableRS).toBe(done.status?.currentPodHash);
    expect(done.status?.updatedReplicas).toBe(2);
    expect((await getHelmRelease('web')).status?.history?.map((h) => h.status)).toEqual(['deployed', 'superseded']);
  }, 240_000);

  it('fails with UpgradeFailed when the Helm upgrade fails, though the Rollout it applied is healthy', async () => {
    await startPlan('api');
    await waitValuesWritten('api');
    const tag = appOf(await getPlan(dev, NS, 'api-prod'), 'api')?.targetTag;
    const image = `${repo('api')}:${tag}@${digests.api}`;

    // Helm applied the manifests (the Rollout rolls out), then a post-upgrade hook failed the upgrade.
    const wrote = await playHelmController(
      prod,
      APPS,
      'api',
      { failed: HOOK_ERROR, afterApply: true },
      {
        render: 'Rollout',
        wait: async () => {
          await waitRolloutHealthy('api', image);
          // kpromo sees the Rollout healthy on the promoted digest, yet waits for the HelmRelease.
          await waitFor('kpromo sees api Healthy in prod', async () => {
            const res = await callApi(ctl.port, `/api/v1/applications?namespace=${NS}`);
            const items = ((await res.json()) as { items: AppView[] }).items;
            const v = items.find((a) => a.name === 'api')?.versions.find((x) => x.environment === 'prod');
            return v?.digest === digests.api && v.health === 'Healthy';
          });
          expect(appOf(await getPlan(dev, NS, 'api-prod'), 'api')).toMatchObject({
            phase: 'RollingOut',
            written: true,
          });
        },
      },
    );
    expect(wrote).toBe(true);

    const plan = await waitPlan(dev, NS, 'api-prod', terminal, 90_000);
    expect(plan.status?.phase).toBe('Incomplete');
    expect(appOf(plan, 'api')).toMatchObject({
      phase: 'Failed',
      reason: 'UpgradeFailed',
      written: true,
      digest: digests.api,
    });
    expect(appOf(plan, 'api')?.message).toBe(
      `HelmRelease ${APPS}/api generation 2 stalled (RetriesExceeded: Failed to upgrade after 1 attempt(s)): UpgradeFailed: Helm upgrade failed for release ${APPS}/api.v2 with chart web@1.4.2: ${HOOK_ERROR}`,
    );
    const ro = await getRollout('api');
    expect(rolloutImage(ro)).toBe(image);
    expect(ro.status?.phase).toBe('Healthy');
  }, 240_000);
});

interface AppView {
  name: string;
  versions: Array<{ environment: string; digest?: string; health: string }>;
}
