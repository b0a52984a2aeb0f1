// The `job` check kind (issue 53): after the rollout, kpromo runs the check's Job in the target
// namespace and its completion decides the check. Real controller and apiservers (with the
// admission policies), real registries, and kube-controller-manager's own Job controller, which
// creates the pods, retries them up to the stage's failureLimit and marks the Job Complete or
// Failed. The container does NOT run here: kwok has no container runtime. kwok's stages play its
// part: upstream's pod-complete makes a Job's Running pod Succeeded, and the harness's
// test/cluster/kwok-job-outcome.yaml makes a Job pod whose command is `false` Failed with exit
// code 1, as /bin/false would. A kwok pod has no log, so the status says there were none.
import type { Application, PromotionPlan } from '@kpromo/api';
import { waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  appOf,
  callApi,
  isTerminalPlan,
  promoteAndWait,
  twoStageWorld,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { JOB, KPROMO_TYPES, resourcePath } from '../src/kube/paths.js';
import type { Running } from '../src/runtime.js';
import type { JobLike } from '../src/verification/providers/job.js';

/** The stable stage's verification; `jobServiceAccount` is added for cart's plan. */
const VERIFICATION = {
  // kwok completes the pod of any command but `false`: this one stands for a smoke test that passes.
  checks: [
    {
      name: 'smoke',
      job: {
        image: 'registry.example/smoke:{version}',
        command: ['/smoke'],
        args: ['--app', '{application}'],
        env: [{ name: 'MODE', value: 'quick' }],
        resources: { limits: { cpu: '100m', memory: '64Mi' } },
      },
    },
  ],
  window: '90s',
  interval: '1s',
  minSamples: 1,
  failureLimit: 1,
  onFailure: 'stop',
};
const stages = (verification: object) => [{ environment: 'dev' }, { environment: 'stable', verification }];

const world = twoStageWorld('vjob', {
  kubeconfig: inject('kubeconfig'),
  registries: inject('registries'),
  apps: ['web', 'cart'],
  flow: { stages: stages(VERIFICATION) },
});
const { ns: NS, appsNs: APPS_NS, dev, stable, repo: REPO } = world;
let ctl: Running;

/** The Jobs kpromo made for `app` in stable's namespace. */
const jobsOf = async (app: string) =>
  (
    await stable.get<{ items: JobLike[] }>(
      `${resourcePath(JOB, APPS_NS)}?labelSelector=${encodeURIComponent(`promotions.kpromo.dev/application=${app}`)}`,
    )
  ).items;

beforeAll(async () => {
  await world.seed();
  // cart adds a check of its own whose pod fails (command `false`, see the header).
  await applyCr(dev, {
    kind: 'Application',
    metadata: { name: 'cart', namespace: NS },
    spec: {
      owner: 'team-a',
      image: { repository: `${REPO}/cart` },
      workloads: [{ kind: 'Deployment', name: 'cart' }],
      verification: { checks: [{ name: 'e2e', job: { image: 'registry.example/e2e:1', command: ['false'] } }] },
    },
  });
  ctl = await world.start();
}, 400_000);

afterAll(() => world.stop());

describe('job checks', () => {
  let web: PromotionPlan;

  it('a Job that completes passes the check, with its duration, and says it had no logs', async () => {
    web = await promoteAndWait(ctl.port, dev, { namespace: NS, from: 'dev', to: 'stable', applications: ['web'] });
    const app = appOf(web, 'web')!;
    expect(app, JSON.stringify(app)).toMatchObject({ phase: 'Succeeded', reason: 'Verified' });
    const [jobs, check] = [await jobsOf('web'), app.verification!.checks[0]!];
    expect(jobs).toHaveLength(1);
    const job = jobs[0]!;
    expect(check).toMatchObject({
      name: 'smoke',
      kind: 'job',
      condition: 'Job completes',
      verdict: 'Passed',
      query: `Job ${APPS_NS}/${job.metadata.name}`,
    });
    expect(check.durationSeconds).toBeGreaterThanOrEqual(0);
    // kwok's pod printed nothing (it ran nothing): no output, and the message says why.
    expect(check.output).toBeUndefined();
    // The apiserver asks the pod's node for the log, and kwok's fake node serves none: the reason is kept.
    expect(check.message).toMatch(
      new RegExp(
        `^Job ${job.metadata.name} succeeded in [0-9.]+s; no logs: GET /api/v1/namespaces/${APPS_NS}/pods/${job.metadata.name}-[a-z0-9]+/log .*failed`,
      ),
    );
  });

  it('runs the narrow template with the new version, without a token or privileges, once per window', async () => {
    const [job] = await jobsOf('web');
    // The tag the plan deployed in stable (the flow's tag template renders it from v2.0.0).
    const tag = appOf(web, 'web')!.targetTag!;
    expect(tag).toMatch(/^v2\.0\.0/);
    const pod = job!.spec!.template!.spec as Record<string, unknown> & { containers: Array<Record<string, unknown>> };
    expect(job!.spec).toMatchObject({ backoffLimit: 1 });
    expect(pod).toMatchObject({ restartPolicy: 'Never', automountServiceAccountToken: false });
    expect(pod.volumes).toBeUndefined();
    const c = pod.containers[0]!;
    expect(c).toMatchObject({
      image: `registry.example/smoke:${tag}`,
      command: ['/smoke'],
      args: ['--app', 'web'],
      securityContext: { allowPrivilegeEscalation: false, privileged: false, capabilities: { drop: ['ALL'] } },
    });
    expect(c.env).toEqual(
      expect.arrayContaining([
        { name: 'MODE', value: 'quick' },
        { name: 'KPROMO_VERSION', value: tag },
        { name: 'KPROMO_PREVIOUS_VERSION', value: 'v1.0.0' },
        { name: 'KPROMO_DIGEST', value: world.devDigest.web },
        { name: 'KPROMO_ENDPOINT', value: `http://web.${APPS_NS}.svc` },
      ]),
    );
    // The Job controller ran it: one pod, Succeeded (kwok's pod-complete).
    expect(job!.status).toMatchObject({ succeeded: 1 });
  });

  it("the HTTP API shows the check's Job, duration and verdict like the other checks", async () => {
    const r = await callApi(ctl.port, `/api/v1/plans/${NS}/${web.metadata.name}`);
    expect(r.status).toBe(200);
    const body = JSON.stringify(await r.json());
    expect(body).toContain('"kind":"job"');
    expect(body).toContain('"durationSeconds"');
  });

  it('the apiserver keeps only the narrow template: a service account, volumes or privileges are pruned', async () => {
    const path = resourcePath(KPROMO_TYPES.Application, NS, 'probe');
    const job = {
      image: 'registry.example/e2e:1',
      serviceAccountName: 'admin',
      volumes: [{ name: 'root', hostPath: { path: '/' } }],
      securityContext: { privileged: true },
      env: [{ name: 'A', value: 'b', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
    };
    await dev.create(resourcePath(KPROMO_TYPES.Application, NS), {
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'Application',
      metadata: { name: 'probe', namespace: NS },
      spec: {
        owner: 'team-a',
        image: { repository: `${REPO}/probe` },
        workloads: [{ kind: 'Deployment', name: 'probe' }],
        verification: { checks: [{ name: 'e2e', job }] },
      },
    });
    const stored = await dev.get<Application>(path);
    expect(stored.spec.verification!.checks[0]!.job).toEqual({
      image: 'registry.example/e2e:1',
      env: [{ name: 'A', value: 'b' }],
    });
    await dev.delete(path);
  });

  it("a Job that fails after the stage's retries fails the app, naming the check; the stage's service account runs it", async () => {
    // The flow's owners grant job checks a ServiceAccount of the target namespace (governed: stages).
    await stable.apply(
      `/api/v1/namespaces/${APPS_NS}/serviceaccounts/smoke-runner`,
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'smoke-runner', namespace: APPS_NS } },
      'ctl-test',
    );
    await applyCr(dev, {
      kind: 'PromotionFlow',
      metadata: { name: 'main', namespace: NS },
      spec: {
        stages: stages({ ...VERIFICATION, jobServiceAccount: 'smoke-runner' }),
        selector: { applications: ['*'] },
        rolloutTimeoutSeconds: 120,
      },
    });
    await waitFor('the flow in the cache', async () =>
      ctl.controller.cache
        .getFlow(NS, 'main')
        ?.spec.stages.some((s) => s.verification?.jobServiceAccount === 'smoke-runner'),
    );
    const plan = await promoteAndWait(
      ctl.port,
      dev,
      { namespace: NS, from: 'dev', to: 'stable', applications: ['cart'] },
      { timeoutMs: 180_000 },
    );
    expect(isTerminalPlan(plan)).toBe(true);
    const cart = appOf(plan, 'cart')!;
    expect(cart, JSON.stringify(cart)).toMatchObject({ phase: 'Failed', reason: 'VerificationFailed' });
    expect(cart.message).toMatch(/check e2e failed: Job kpromo-cart-e2e-[0-9a-f]+ failed .*BackoffLimitExceeded/);
    const e2e = cart.verification!.checks.find((c) => c.name === 'e2e')!;
    expect(e2e).toMatchObject({ kind: 'job', verdict: 'Failed' });
    // failureLimit 1: the Job controller tried the pod twice before the Job failed.
    const failed = await waitFor('cart e2e Job', async () =>
      (await jobsOf('cart')).find((j) => j.metadata.name.startsWith('kpromo-cart-e2e-')),
    );
    expect(failed.status).toMatchObject({ failed: 2 });
    // The admission of its pods accepted the account (it exists), with its token.
    expect(failed.spec!.template!.spec).toMatchObject({
      serviceAccountName: 'smoke-runner',
      automountServiceAccountToken: true,
    });
    const pods = await stable.get<{ items: Array<{ spec: { serviceAccountName?: string } }> }>(
      `/api/v1/namespaces/${APPS_NS}/pods?labelSelector=${encodeURIComponent(`batch.kubernetes.io/job-name=${failed.metadata.name}`)}`,
    );
    expect(pods.items.map((p) => p.spec.serviceAccountName)).toEqual(['smoke-runner', 'smoke-runner']);
  });
});
