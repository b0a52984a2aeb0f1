import type { Application, PromotionPlan } from '@kpromo/api';
import {
  type ArgoRollouts,
  applyCrds,
  kubeConfigFor,
  needComponents,
  startArgoRollouts,
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
  getPlan,
  pushTestImage,
  restFor,
  runNamespaces,
  isTerminalPlan as terminal,
  waitPlan,
  withShown,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KPROMO_TYPES, ROLLOUT, resourcePath } from '../src/kube/paths.js';
import { createLogger } from '../src/observability/logger.js';
import { builtinWorkloadKinds } from '../src/rollout/registry.js';
import { type Running, startController } from '../src/runtime.js';

// Built before this file's hooks run (in the background on a fresh machine): test/cluster/need.ts.
await needComponents('argo');

// Every workload kind end to end, against the real local clusters: kube-controller-manager's
// Deployment, StatefulSet, DaemonSet, CronJob and Job controllers, kwok running (faking) the pods,
// and the real Argo Rollouts controller (built from its Go module, test/argo/) for Rollouts. Both
// Environments are namespaces of the dev cluster (Argo Rollouts runs against that one, namespaced).
//
// What kwok cannot do, and what the failing cases use instead (each a signal the real controllers write):
// - kwok's stages make every pod Ready and complete every Job pod successfully: no pod ever fails,
//   so no Job reaches BackoffLimitExceeded here. A failing Job (and a failing CronJob run) is one whose
//   pod cannot be scheduled, failed by the Job controller at its activeDeadlineSeconds
//   (DeadlineExceeded); BackoffLimitExceeded is covered by the unit tests of kinds/job.ts.
// - StatefulSets and DaemonSets have no failure condition upstream: their failing rollouts fail at
//   the flow's rollout timeout. The StatefulSet's pod cannot be scheduled (and its controller does not
//   replace a pod that never became Ready, so 0 replicas are updated); the DaemonSet's new pod is
//   never available (minReadySeconds: 3600).
// - A Deployment whose pods cannot be scheduled fails with the Deployment controller's
//   ProgressDeadlineExceeded condition.
// - A Rollout is promoted and aborted the way `kubectl argo rollouts promote|abort` do it: a merge
//   patch of the Rollout's status subresource (pauseConditions: null; abort: true).

const names = runNamespaces('wk');
const NS = names.ns;
const SRC = names.apps;
const TGT = `${names.apps}-tgt`;
const OLD = 'v1.0.0';
const NEW = 'v1.1.0';

type Kind = 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'Rollout' | 'CronJob' | 'Job';
interface Case {
  app: string;
  kind: Kind;
  /** Flow: `long` (rollout timeout 180 s) or `short` (20 s, for the failures only a timeout reports). */
  flow: 'long' | 'short';
  /** How the target workload is made to fail (the source one always runs fine). */
  fail?: 'unschedulable' | 'neverAvailable';
  waitForNextRun?: boolean;
  /** Canary with a pause step (Rollouts). */
  canary?: boolean;
}
const CASES: Case[] = [
  { app: 'deploy-ok', kind: 'Deployment', flow: 'long' },
  { app: 'deploy-bad', kind: 'Deployment', flow: 'long', fail: 'unschedulable' },
  { app: 'sts-ok', kind: 'StatefulSet', flow: 'long' },
  { app: 'sts-bad', kind: 'StatefulSet', flow: 'short', fail: 'unschedulable' },
  { app: 'ds-ok', kind: 'DaemonSet', flow: 'long' },
  { app: 'ds-bad', kind: 'DaemonSet', flow: 'short', fail: 'neverAvailable' },
  { app: 'ro-ok', kind: 'Rollout', flow: 'long', canary: true },
  { app: 'ro-abort', kind: 'Rollout', flow: 'long', canary: true },
  { app: 'cron-ok', kind: 'CronJob', flow: 'long', waitForNextRun: true },
  { app: 'cron-bad', kind: 'CronJob', flow: 'long', waitForNextRun: true, fail: 'unschedulable' },
  { app: 'job-ok', kind: 'Job', flow: 'long' },
  { app: 'job-bad', kind: 'Job', flow: 'long', fail: 'unschedulable' },
];
const byFlow = (f: Case['flow']) => CASES.filter((c) => c.flow === f).map((c) => c.app);

const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const log = createLogger({ level: process.env.CTL_TEST_LOG ?? 'silent' });
const digests: Record<string, { old: string; new: string }> = {};
const argo: ArgoRollouts[] = [];
let ctl: Running;

/** The pod template every kind runs (kwok's fake node; `unschedulable`: no node matches). */
function podTemplate(c: Case, image: string, inTarget: boolean) {
  const unschedulable = inTarget && c.fail === 'unschedulable';
  const batch = c.kind === 'Job' || c.kind === 'CronJob';
  return {
    metadata: { labels: { app: c.app } },
    spec: {
      tolerations: [{ operator: 'Exists' }],
      ...(unschedulable ? { nodeSelector: { 'kpromo.dev/nowhere': 'true' } } : {}),
      ...(batch ? { restartPolicy: 'Never' } : {}),
      containers: [{ name: 'main', image }],
    },
  };
}

/** The workload of a case in one namespace, as a GitOps repository would declare it. */
function workload(c: Case, ns: string, image: string) {
  const inTarget = ns === TGT;
  const template = podTemplate(c, image, inTarget);
  const selector = { matchLabels: { app: c.app } };
  const metadata = { name: c.app, namespace: ns };
  const jobSpec = {
    backoffLimit: 0,
    // A pod that cannot be scheduled fails the Job at this deadline (DeadlineExceeded).
    ...(inTarget && c.fail ? { activeDeadlineSeconds: 3 } : {}),
    template,
  };
  switch (c.kind) {
    case 'Deployment':
      return {
        apiVersion: 'apps/v1',
        kind: c.kind,
        metadata,
        spec: { replicas: 1, selector, template, ...(inTarget && c.fail ? { progressDeadlineSeconds: 5 } : {}) },
      };
    case 'StatefulSet':
      return {
        apiVersion: 'apps/v1',
        kind: c.kind,
        metadata,
        spec: { replicas: 1, serviceName: c.app, selector, template },
      };
    case 'DaemonSet':
      return {
        apiVersion: 'apps/v1',
        kind: c.kind,
        metadata,
        spec: { selector, template, ...(inTarget && c.fail === 'neverAvailable' ? { minReadySeconds: 3600 } : {}) },
      };
    case 'Rollout':
      return {
        apiVersion: 'argoproj.io/v1alpha1',
        kind: c.kind,
        metadata,
        spec: {
          replicas: 2,
          selector,
          template,
          strategy: { canary: { steps: c.canary ? [{ setWeight: 50 }, { pause: {} }] : [] } },
        },
      };
    case 'CronJob':
      return {
        apiVersion: 'batch/v1',
        kind: c.kind,
        metadata,
        spec: {
          schedule: '* * * * *',
          concurrencyPolicy: 'Forbid',
          // The source only has to show what it runs; the target runs every minute.
          suspend: !inTarget,
          jobTemplate: { spec: jobSpec },
        },
      };
    case 'Job':
      return { apiVersion: 'batch/v1', kind: c.kind, metadata, spec: jobSpec };
  }
}

const path = (c: Case, ns: string) => resourcePath(builtinWorkloadKinds.get(c.kind)!.resource, ns, c.app);
const image = (c: Case, where: 'src' | 'tgt') =>
  where === 'src'
    ? `${source}/kinds/${c.app}:${NEW}@${digests[c.app].new}`
    : `${target}/tgt/kinds/${c.app}:${OLD}@${digests[c.app].old}`;

/** `kubectl argo rollouts promote|abort`: a merge patch of the Rollout's status subresource. */
const patchRolloutStatus = (name: string, status: Record<string, unknown>) =>
  dev.request('PATCH', `${resourcePath(ROLLOUT, TGT, name)}/status`, {
    contentType: 'application/merge-patch+json',
    body: { status },
  });

beforeAll(async () => {
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  for (const ns of [NS, SRC, TGT]) await ensureNs(dev, ns);
  // The real Argo Rollouts controller, namespaced, one per Environment namespace (built on first use).
  for (const namespace of [SRC, TGT])
    argo.push(await startArgoRollouts({ kubeconfig, namespace, log: (m) => console.log(`[argo] ${m}`) }));

  for (const c of CASES) {
    digests[c.app] = {
      new: (await pushTestImage({ host: source, repository: `kinds/${c.app}`, tag: NEW, seed: `new-${c.app}` })).digest,
      old: (await pushTestImage({ host: target, repository: `tgt/kinds/${c.app}`, tag: OLD, seed: `old-${c.app}` }))
        .digest,
    };
    // Server-side apply retries while a just-installed CRD (Rollout) is not served for writes yet.
    await waitFor(`${c.kind} ${c.app}`, async () => {
      await dev.apply(path(c, SRC), workload(c, SRC, image(c, 'src')), 'ctl-test');
      await dev.apply(path(c, TGT), workload(c, TGT, image(c, 'tgt')), 'ctl-test');
      return true;
    });
  }

  const env = (name: string, namespace: string, registry: object) =>
    crs.environment(NS, name, { context: 'dev', namespace, registry, delivery: { method: 'patch' } });
  await applyCr(dev, env('src', SRC, { host: source, insecure: true }));
  await applyCr(dev, env('tgt', TGT, { host: target, prefix: 'tgt', insecure: true }));
  for (const [flow, timeout] of [
    ['long', 180],
    ['short', 20],
  ] as const)
    await applyCr(
      dev,
      crs.flow(NS, flow, ['src', 'tgt'], {
        selector: { applications: byFlow(flow) },
        concurrency: 16,
        rolloutTimeoutSeconds: timeout,
      }),
    );
  for (const c of CASES)
    await applyCr(dev, {
      kind: 'Application',
      metadata: { name: c.app, namespace: NS },
      spec: {
        owner: 'team-a',
        image: { repository: `kinds/${c.app}` },
        workloads: [{ kind: c.kind, name: c.app, ...(c.waitForNextRun ? { waitForNextRun: true } : {}) }],
      },
    });

  ctl = await startController(controllerConfig(kubeconfig, NS), { log });
}, 1_200_000);

afterAll(async () => {
  await ctl?.stop().catch(() => undefined);
  for (const a of argo) await a.stop().catch(() => undefined);
  for (const ns of [NS, SRC, TGT]) await deleteNs(dev, ns);
});

interface AppView {
  name: string;
  versions: Array<{ environment: string; digest?: string; health: string; message?: string }>;
}
const apps = async () =>
  ((await (await callApi(ctl.port, `/api/v1/applications?namespace=${NS}`)).json()) as { items: AppView[] }).items;

describe('workload kinds against the real workload controllers and Argo Rollouts', () => {
  const plans: Record<'long' | 'short', string> = { long: 'kinds-long', short: 'kinds-short' };

  it('sees what every kind runs (informers per kind) and plans the promotion from it', async () => {
    // Every source workload Healthy, read from the new kinds' informers (DaemonSet, Rollout, CronJob, Job).
    const seen = await waitFor(
      'source versions',
      async () => {
        const items = await apps();
        const ok = CASES.every((c) => {
          const v = items.find((a) => a.name === c.app)?.versions.find((x) => x.environment === 'src');
          return v?.health === 'Healthy' && v.digest === digests[c.app].new;
        });
        return ok ? items : undefined;
      },
      120_000,
      500,
    );
    for (const c of CASES)
      expect(seen.find((a) => a.name === c.app)?.versions.find((x) => x.environment === 'tgt')?.digest).toBe(
        digests[c.app].old,
      );

    for (const flow of ['long', 'short'] as const) {
      const res = await callApi(ctl.port, '/api/v1/plans', {
        method: 'POST',
        body: await withShown(ctl.port, {
          namespace: NS,
          flow,
          from: 'src',
          to: 'tgt',
          name: plans[flow],
          approve: true,
        }),
      });
      expect(res.status).toBe(201);
      const { plan } = (await res.json()) as { plan: PromotionPlan };
      expect(plan.spec.candidates.map((x) => x.application).sort()).toEqual(byFlow(flow).sort());
    }
  }, 180_000);

  it('a canary Rollout with a pause step shows Paused, the plan keeps waiting, and it succeeds once promoted', async () => {
    const paused = await waitPlan(dev, NS, plans.long, (p) => !!appOf(p, 'ro-ok')?.message?.startsWith('Paused:'));
    expect(paused.status?.phase).toBe('Promoting');
    expect(appOf(paused, 'ro-ok')).toMatchObject({ phase: 'RollingOut', written: true });
    expect(appOf(paused, 'ro-ok')?.message).toMatch(
      /^Paused: ro-ok: Rollout is paused \(CanaryPauseStep at step 2 of 2\); promote it to continue/,
    );
    // Still paused a few seconds later: waiting, not failed.
    await new Promise((r) => setTimeout(r, 3000));
    expect(appOf(await getPlan(dev, NS, plans.long), 'ro-ok')?.phase).toBe('RollingOut');

    await patchRolloutStatus('ro-ok', { pauseConditions: null });
    const done = await waitPlan(dev, NS, plans.long, (p) => appOf(p, 'ro-ok')?.phase === 'Succeeded', 120_000);
    expect(appOf(done, 'ro-ok')).toMatchObject({ reason: 'RolloutComplete', message: 'ro-ok ready in tgt' });
  }, 240_000);

  it('an aborted Rollout fails the app with the reason', async () => {
    await waitPlan(dev, NS, plans.long, (p) => !!appOf(p, 'ro-abort')?.message?.startsWith('Paused:'));
    await patchRolloutStatus('ro-abort', { abort: true });
    const failed = await waitPlan(dev, NS, plans.long, (p) => appOf(p, 'ro-abort')?.phase === 'Failed', 120_000);
    expect(appOf(failed, 'ro-abort')).toMatchObject({ reason: 'RolloutAborted' });
    // Aborted during a canary pause, Argo may still carry the pause's reason as the message.
    expect(appOf(failed, 'ro-abort')?.message).toMatch(
      /^ro-abort: (Rollout aborted update to revision \d+|CanaryPauseStep)$/,
    );
  }, 180_000);

  it("judges every kind's success and failure from what its controller reports", async () => {
    const long = await waitPlan(dev, NS, plans.long, terminal, 240_000);
    const short = await waitPlan(dev, NS, plans.short, terminal, 120_000);
    expect(long.status?.phase).toBe('Incomplete');
    expect(short.status?.phase).toBe('Incomplete');
    const app = (name: string) => appOf(name.startsWith('sts-bad') || name.startsWith('ds-bad') ? short : long, name);

    for (const name of ['deploy-ok', 'sts-ok', 'ds-ok', 'ro-ok', 'cron-ok', 'job-ok'])
      expect(app(name), name).toMatchObject({
        phase: 'Succeeded',
        reason: 'RolloutComplete',
        message: `${name} ready in tgt`,
        digest: digests[name].new,
      });
    const failures: Array<[string, string, RegExp]> = [
      ['deploy-bad', 'ProgressDeadlineExceeded', /^ReplicaSet "deploy-bad-\w+" has timed out progressing\.$/],
      ['sts-bad', 'RolloutTimeout', /^not ready after 20s: sts-bad: 0 of 1 replicas updated$/],
      ['ds-bad', 'RolloutTimeout', /^not ready after 20s: ds-bad: 0 of 1 updated pods available$/],
      ['ro-abort', 'RolloutAborted', /^ro-abort: (Rollout aborted update to revision \d+|CanaryPauseStep)$/],
      [
        'cron-bad',
        'DeadlineExceeded',
        /^cron-bad: run cron-bad-\d+: Job failed \(DeadlineExceeded\): Job was active longer than specified deadline$/,
      ],
      [
        'job-bad',
        'DeadlineExceeded',
        /^job-bad: Job failed \(DeadlineExceeded\): Job was active longer than specified deadline$/,
      ],
    ];
    for (const [name, reason, message] of failures) {
      expect(app(name), name).toMatchObject({ phase: 'Failed', reason });
      expect(app(name)?.message, name).toMatch(message);
    }

    // The Job was created again with the promoted image; the CronJob's template carries it.
    const job = await dev.get<{ spec: { template: { spec: { containers: Array<{ image: string }> } } } }>(
      path(CASES.find((c) => c.app === 'job-ok')!, TGT),
    );
    expect(job.spec.template.spec.containers[0].image).toBe(
      `${target}/tgt/kinds/job-ok:${app('job-ok')?.targetTag}@${digests['job-ok'].new}`,
    );

    // Application status shows the promoted versions of every kind in the target, as the portals read it.
    const ok = ['deploy-ok', 'sts-ok', 'ds-ok', 'ro-ok', 'cron-ok', 'job-ok'];
    await waitFor(
      'Application status in tgt',
      async () => {
        for (const name of ok) {
          const a = await dev.get<Application>(resourcePath(KPROMO_TYPES.Application, NS, name));
          const v = a.status?.versions?.find((x) => x.environment === 'tgt');
          if (v?.digest !== digests[name].new || v.health !== 'Healthy') return false;
        }
        return true;
      },
      60_000,
      500,
    );
  }, 300_000);
});
