// Split brain on the real control plane: leader fencing and journal-safe status writes.
// - In process: a leader whose event loop is blocked past its renew deadline (as by SIGSTOP, a long
//   GC or a VM pause) fails its fence before its timers notice, and a fenced status write sends nothing.
// - Two controller processes: the leader is SIGSTOPped mid-plan, the standby takes over and finishes,
//   the old leader is SIGCONTed and writes nothing: no second copy, no second write, no status regression.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PromotionPlan } from '@kpromo/api';
import { applyCrds, kubeConfigFor, REPO_ROOT, waitFor } from '@kpromo/test-harness';
import {
  applyCr,
  applyDeployment,
  appOf,
  deleteNs,
  deploymentImage,
  ensureNs,
  eventReasons,
  getPlan,
  restFor,
  seedTwoStageRelease,
  testTokensFile,
  waitPlan,
} from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { FencedError, LeaderElector } from '../src/leader/leaderElection.js';
import { StatusConflictError, StatusWriter } from '../src/reconcile/statusWriter.js';

const RUN = Math.random().toString(36).slice(2, 7);
const NS = `split-${RUN}`;
const APPS_NS = `split-apps-${RUN}`;
const APPS = ['s1', 's2', 's3'];
const REPO = `split${RUN}`;
const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const stable = restFor(kubeconfig, 'stable');
const LEASE = 'split-leader';
const children: ChildProcess[] = [];

beforeAll(async () => {
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  await ensureNs(dev, NS);
  await seedTwoStageRelease({
    dev,
    stable,
    ns: NS,
    appsNs: APPS_NS,
    source,
    target,
    repo: REPO,
    apps: APPS,
    newTag: 'v3.0.0',
    oldTag: 'v2.0.0',
    seed: `split-${RUN}`,
    applications: {},
  });
}, 180_000);

afterAll(async () => {
  for (const c of children) {
    c.kill('SIGCONT');
    c.kill('SIGKILL');
  }
  await deleteNs(dev, NS);
  for (const c of [dev, stable]) await deleteNs(c, APPS_NS);
});

/** Blocks the event loop like a paused process: nothing else runs meanwhile. */
const freeze = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

describe('leader fencing', () => {
  it('a leader paused past its renew deadline fails its fence at once, and a fenced status write sends nothing', async () => {
    const elector = new LeaderElector(dev, {
      namespace: NS,
      name: `fence-${RUN}`,
      identity: 'fenced',
      leaseDurationSeconds: 3,
      renewIntervalMs: 500,
    });
    elector.start();
    await waitFor('leading', async () => elector.isLeader || undefined, 15_000);
    expect(() => elector.fence()).not.toThrow();
    const plan = await applyCr(dev, {
      kind: 'PromotionPlan',
      metadata: { name: 'fenced-plan', namespace: NS },
      spec: { flow: 'main', from: 'dev', to: 'stable', candidates: [] },
    } as never);
    const writer = new StatusWriter(dev, plan as PromotionPlan, { fence: () => elector.fence() });
    freeze(2_200); // past the 2 s renew deadline (two thirds of 3 s)
    // Still "leader" as far as its timers know, but the fence says no, before anything else runs.
    expect(elector.isLeader).toBe(true);
    expect(() => elector.fence()).toThrow(FencedError);
    await expect(writer.write({ phase: 'Failed' })).rejects.toBeInstanceOf(FencedError);
    expect((await getPlan(dev, NS, 'fenced-plan')).status).toBeUndefined();
    await elector.stop();
  });

  it('a status write never overwrites a status someone else changed; a spec change alone is merged', async () => {
    const p = (await applyCr(dev, {
      kind: 'PromotionPlan',
      metadata: { name: 'two-writers', namespace: NS },
      spec: { flow: 'main', from: 'dev', to: 'stable', candidates: [] },
    } as never)) as PromotionPlan;
    const a = new StatusWriter(dev, structuredClone(p));
    const b = new StatusWriter(dev, structuredClone(p));
    await a.write({ phase: 'Promoting', apps: [{ application: 's1', phase: 'Copying' }] });
    // b read before a wrote: its copy is stale and the status moved, so it must not write.
    await expect(b.write({ phase: 'Pending' })).rejects.toBeInstanceOf(StatusConflictError);
    expect((await getPlan(dev, NS, 'two-writers')).status?.phase).toBe('Promoting');
    // An approval appended to the spec bumps the resourceVersion; a's status is still the latest.
    await dev.jsonPatch(`/apis/promotions.kpromo.dev/v1alpha1/namespaces/${NS}/promotionplans/two-writers`, [
      { op: 'add', path: '/spec/approvals', value: [{ user: 'kpromo-admin', planUID: p.metadata.uid }] },
    ]);
    await a.write({ phase: 'Promoting', apps: [{ application: 's1', phase: 'Writing', copied: true }] });
    const after = await getPlan(dev, NS, 'two-writers');
    expect(appOf(after, 's1')).toMatchObject({ phase: 'Writing', copied: true });
    expect(after.spec.approvals).toEqual([{ user: 'kpromo-admin', planUID: p.metadata.uid }]);
  });
});

function startControllerProcess(identity: string, tokens: string): ChildProcess {
  const dir = mkdtempSync(join(tmpdir(), `kpromo-${identity}-`));
  const cfg = join(dir, 'config.yaml');
  writeFileSync(
    cfg,
    stringify({
      kubeconfig,
      context: 'dev',
      namespaces: [NS],
      defaultNamespace: NS,
      logLevel: 'info',
      server: { host: '127.0.0.1', port: 0 },
      auth: { staticTokensFile: tokens },
      clusterAccess: [{ namespaces: [NS], contexts: ['dev', 'stable', 'prod'], targetNamespaces: [APPS_NS] }],
      // The harness registries listen on loopback, which the egress guard refuses unless allowed.
      egress: { allowedCidrs: ['127.0.0.1/32'] },
      leaderElection: {
        enabled: true,
        namespace: NS,
        name: LEASE,
        identity,
        leaseDurationSeconds: 4,
        renewIntervalMs: 1000,
      },
    }),
  );
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(REPO_ROOT, 'controller/src/main.ts'), 'run', '--config', cfg],
    { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, KUBECONFIG: kubeconfig } },
  );
  children.push(child);
  return child;
}

const holder = async () =>
  (
    await dev.getOrUndefined<{ spec?: { holderIdentity?: string } }>(
      `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/${LEASE}`,
    )
  )?.spec?.holderIdentity;

describe('two controller processes', () => {
  it('SIGSTOP the leader mid-plan: the standby finishes, the woken leader writes nothing', async () => {
    // Stable pods cannot schedule yet: the plan stops at RollingOut, in the hands of the first leader.
    for (const app of APPS) {
      const image = (await deploymentImage(stable, APPS_NS, app))!;
      await applyDeployment(stable, APPS_NS, app, image, { stuck: true });
    }
    const tokens = testTokensFile();
    const a = startControllerProcess('ctl-a', tokens);
    await waitFor('ctl-a leads', async () => ((await holder()) === 'ctl-a' ? true : undefined), 60_000);
    const b = startControllerProcess('ctl-b', tokens);
    const dig = Object.fromEntries(
      await Promise.all(
        APPS.map(async (app) => [app, (await deploymentImage(dev, APPS_NS, app))!.split('@')[1]] as const),
      ),
    );
    await applyCr(dev, {
      kind: 'PromotionPlan',
      metadata: { name: 'split-plan', namespace: NS },
      spec: {
        flow: 'main',
        from: 'dev',
        to: 'stable',
        candidates: APPS.map((application) => ({ application, from: { tag: 'v3.0.0', digest: dig[application] } })),
        approvals: [{ user: 'kpromo-admin' }],
      },
    } as never);
    const rolling = await waitPlan(
      dev,
      NS,
      'split-plan',
      (p) => APPS.every((x) => appOf(p, x)?.phase === 'RollingOut'),
      90_000,
    );
    // Events follow the status write that recorded the step (best effort, in the background): wait
    // for them, so the count below tells a second write from an Event lost to the SIGSTOP.
    await waitFor(
      'ctl-a recorded its ImageCopied and DesiredStateWritten events',
      async () => {
        const reasons = await eventReasons(dev, NS, 'split-plan');
        const n = (reason: string) => reasons.filter((r) => r === reason).length;
        return n('ImageCopied') >= APPS.length && n('DesiredStateWritten') >= APPS.length ? true : undefined;
      },
      30_000,
    );
    a.kill('SIGSTOP');
    await waitFor('ctl-b takes over', async () => ((await holder()) === 'ctl-b' ? true : undefined), 30_000);
    // Let the rollouts finish: pods may schedule now (same image the controller wrote).
    for (const app of APPS) {
      const image = (await deploymentImage(stable, APPS_NS, app))!;
      await applyDeployment(stable, APPS_NS, app, image);
    }
    const done = await waitPlan(dev, NS, 'split-plan', (p) => p.status?.phase === 'Complete', 90_000);
    a.kill('SIGCONT');
    // The woken leader had the plan in flight; give it time to try whatever it was about to do.
    await new Promise((r) => setTimeout(r, 6_000));
    const after = await getPlan(dev, NS, 'split-plan');
    expect(after.status?.phase).toBe('Complete');
    expect(after.metadata.resourceVersion).toBe(done.metadata.resourceVersion);
    for (const app of APPS) {
      const x = appOf(after, app)!;
      expect(x).toMatchObject({ phase: 'Succeeded', copied: true, written: true });
      // Same unique tag as before the takeover: the standby resumed from the journal.
      expect(x.targetTag).toBe(appOf(rolling, app)?.targetTag);
    }
    const reasons = await eventReasons(dev, NS, 'split-plan');
    expect(reasons.filter((r) => r === 'ImageCopied')).toHaveLength(APPS.length);
    expect(reasons.filter((r) => r === 'DesiredStateWritten')).toHaveLength(APPS.length);
    // One new tag per app in the target registry: no second copy under a new unique tag.
    for (const app of APPS) {
      const tags = (await (await fetch(`http://${target}/v2/stable/${REPO}/${app}/tags/list`)).json()) as {
        tags: string[];
      };
      expect(tags.tags.filter((t) => t.startsWith('v3.0.0-'))).toEqual([appOf(after, app)!.targetTag]);
    }
    expect(await holder()).toBe('ctl-b');
    b.kill('SIGTERM');
    a.kill('SIGTERM');
  }, 300_000);
});
