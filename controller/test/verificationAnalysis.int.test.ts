// Verification with Argo Rollouts analysis (issue 33): the `analysis` check reads the outcome of the
// AnalysisRuns that Argo Rollouts' own controller (built from its Go module) runs for a canary step,
// and those AnalysisRuns query a real Prometheus (built from its Go module) scraping metric endpoints
// this test serves. A good canary's AnalysisRun succeeds and the app is Verified; a bad one's fails,
// Argo aborts the Rollout, and kpromo reports a failed verification naming the AnalysisRun.
import type { PromotionPlan } from '@kpromo/api';
import {
  type ArgoRollouts,
  applyCrds,
  kubeConfigFor,
  type MetricsEndpoint,
  needComponents,
  type Prometheus,
  startArgoRollouts,
  startMetricsEndpoint,
  startPrometheus,
  waitFor,
} from '@kpromo/test-harness';
import {
  applyCr,
  appOf,
  callApi,
  controllerConfig,
  crs,
  deleteNs,
  ensureNs,
  promoteAndWait,
  pushTestImage,
  restFor,
  runNamespaces,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ROLLOUT, resourcePath } from '../src/kube/paths.js';
import { createLogger } from '../src/observability/logger.js';
import { type Running, startController } from '../src/runtime.js';

await needComponents('argo', 'prometheus');

const names = runNamespaces('vanalysis');
const NS = names.ns;
const SRC = names.apps;
const TGT = `${names.apps}-tgt`;
const APPS = { 'ro-good': 0, 'ro-bad': 0.3 } as const;
const NEW = 'v2.0.0';
const OLD = 'v1.0.0';
const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const argo: ArgoRollouts[] = [];
let ctl: Running;
let prom: Prometheus;
let metrics: MetricsEndpoint;

const ANALYSIS_TEMPLATE = 'AnalysisTemplate';
const templatePath = (ns: string) => `/apis/argoproj.io/v1alpha1/namespaces/${ns}/analysistemplates/error-rate`;

/** Argo's AnalysisTemplate: the error ratio of the app over 10 s, three measurements a second apart. */
const template = (ns: string) => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: ANALYSIS_TEMPLATE,
  metadata: { name: 'error-rate', namespace: ns },
  spec: {
    args: [{ name: 'app' }],
    metrics: [
      {
        name: 'error-rate',
        interval: '1s',
        count: 3,
        failureLimit: 0,
        successCondition: 'result[0] <= 0.05',
        provider: {
          prometheus: {
            address: prom.url,
            query:
              'sum(rate(http_requests_total{app="{{args.app}}",code="500"}[10s])) / sum(rate(http_requests_total{app="{{args.app}}"}[10s]))',
          },
        },
      },
    ],
  },
});

/** A canary Rollout whose second step is that analysis. */
const rollout = (ns: string, app: string, image: string) => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'Rollout',
  metadata: { name: app, namespace: ns },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app } },
    template: {
      metadata: { labels: { app } },
      spec: { tolerations: [{ operator: 'Exists' }], containers: [{ name: 'main', image }] },
    },
    strategy: {
      canary: {
        steps: [
          { setWeight: 50 },
          { analysis: { templates: [{ templateName: 'error-rate' }], args: [{ name: 'app', value: app }] } },
        ],
      },
    },
  },
});

beforeAll(async () => {
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  for (const ns of [NS, SRC, TGT]) await ensureNs(dev, ns);
  metrics = await startMetricsEndpoint();
  for (const [app, errors] of Object.entries(APPS)) metrics.setTraffic(app, 'any', 20, errors);
  prom = await startPrometheus({ targets: [metrics.target] });
  await prom.waitForTargets();
  for (const namespace of [SRC, TGT]) argo.push(await startArgoRollouts({ kubeconfig, namespace }));
  for (const app of Object.keys(APPS)) {
    const neu = (
      await pushTestImage({ host: source, repository: `va/${app}`, tag: NEW, seed: `va-new-${app}-${names.run}` })
    ).digest;
    const old = (
      await pushTestImage({ host: target, repository: `tgt/va/${app}`, tag: OLD, seed: `va-old-${app}-${names.run}` })
    ).digest;
    // Server-side apply retries while a just-installed CRD is not served for writes yet.
    await waitFor(`Rollout ${app}`, async () => {
      for (const ns of [SRC, TGT]) await dev.apply(templatePath(ns), template(ns), 'ctl-test');
      await dev.apply(
        resourcePath(ROLLOUT, SRC, app),
        rollout(SRC, app, `${source}/va/${app}:${NEW}@${neu}`),
        'ctl-test',
      );
      await dev.apply(
        resourcePath(ROLLOUT, TGT, app),
        rollout(TGT, app, `${target}/tgt/va/${app}:${OLD}@${old}`),
        'ctl-test',
      );
      return true;
    });
    await applyCr(dev, {
      kind: 'Application',
      metadata: { name: app, namespace: NS },
      spec: { owner: 'team-a', image: { repository: `va/${app}` }, workloads: [{ kind: 'Rollout', name: app }] },
    });
  }
  await applyCr(
    dev,
    crs.environment(NS, 'src', {
      context: 'dev',
      namespace: SRC,
      registry: { host: source, insecure: true },
      delivery: { method: 'patch' },
    }),
  );
  await applyCr(dev, {
    ...crs.environment(NS, 'tgt', {
      context: 'dev',
      namespace: TGT,
      registry: { host: target, prefix: 'tgt', insecure: true },
      delivery: { method: 'patch' },
    }),
  });
  await applyCr(dev, {
    kind: 'PromotionFlow',
    metadata: { name: 'canary', namespace: NS },
    spec: {
      stages: [
        { environment: 'src' },
        {
          environment: 'tgt',
          verification: {
            checks: [{ name: 'canary-analysis', analysis: {} }],
            window: '2s',
            interval: '1s',
            minSamples: 1,
          },
        },
      ],
      selector: { applications: Object.keys(APPS) },
      rolloutTimeoutSeconds: 180,
    },
  });
  ctl = await startController(controllerConfig(kubeconfig, NS), { log: createLogger({ level: 'warn' }) });
  // Both Rollouts Healthy in the source before a plan can be made from it.
  await waitFor(
    'source versions',
    async () => {
      const r = await callApi(ctl.port, `/api/v1/applications?namespace=${NS}`);
      const items = ((await r.json()) as { items: Array<{ versions: Array<{ environment: string; health: string }> }> })
        .items;
      return (
        items.length === 2 &&
        items.every((a) => a.versions.some((v) => v.environment === 'src' && v.health === 'Healthy'))
      );
    },
    120_000,
    500,
  );
}, 1_200_000);

afterAll(async () => {
  await ctl?.stop().catch(() => undefined);
  for (const a of argo) await a.stop().catch(() => undefined);
  await prom?.stop().catch(() => undefined);
  await metrics?.close().catch(() => undefined);
  for (const ns of [NS, SRC, TGT]) await deleteNs(dev, ns);
});

const promote = (name: string, app: string): Promise<PromotionPlan> =>
  promoteAndWait(
    ctl.port,
    dev,
    { namespace: NS, flow: 'canary', from: 'src', to: 'tgt', applications: [app], name },
    { timeoutMs: 240_000 },
  );

describe("verification by Argo Rollouts' own analysis", () => {
  it("a canary whose AnalysisRun (Argo's controller querying Prometheus) succeeds is Verified", async () => {
    const done = await promote('good', 'ro-good');
    const app = appOf(done, 'ro-good')!;
    expect(done.status?.phase, app.message).toBe('Complete');
    expect(app).toMatchObject({ phase: 'Succeeded', reason: 'Verified' });
    expect(app.verification?.checks[0]).toMatchObject({
      name: 'canary-analysis',
      kind: 'analysis',
      verdict: 'Passed',
      message: '1 AnalysisRun(s) Successful',
    });
  });

  it('a canary whose AnalysisRun fails is aborted by Argo and fails verification, naming the AnalysisRun', async () => {
    const done = await promote('bad', 'ro-bad');
    const app = appOf(done, 'ro-bad')!;
    expect(done.status?.phase).toBe('Incomplete');
    expect(app).toMatchObject({ phase: 'Failed', reason: 'VerificationFailed' });
    expect(app.message).toMatch(/check canary-analysis failed: AnalysisRun ro-bad-[a-z0-9]+-\d+-\d+ Failed/);
    expect(app.verification?.checks[0]).toMatchObject({ name: 'canary-analysis', verdict: 'Failed' });
  });
});
