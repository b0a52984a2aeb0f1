// A release on the local clusters for fault injection (controller/test/faults.int.test.ts and
// controller/bench/faults.ts): N apps dev -> stable, real registries (the target one behind a
// switchable fault proxy), patch or git delivery, and the measurements the fault table reports.
import type { PromotionPlan } from '@kpromo/api';
import { createBareRepo, startFaultProxy } from '@kpromo/test-harness';
import { parse as parseYaml } from 'yaml';
import type { KubeRest } from '../src/kube/rest.js';
import {
  applyCr,
  applyDeployment,
  appOf,
  crs,
  deleteNs,
  deploymentImage,
  ensureNs,
  getPlan,
  pushTestImage,
  waitReady,
} from './e2eHelpers.js';

export interface Outcome {
  converged: boolean;
  /** Extra unique tags beyond one per app in the target registry (a second copy under a new tag). */
  duplicateCopies: number;
  /** Extra controller commits beyond one per app in the GitOps repo. */
  duplicateCommits: number;
  /** Candidates without a Succeeded entry in the final status. */
  lostStatusEntries: number;
  /** From approval to the last plan reaching Complete (or to giving up). */
  convergeMs: number;
}

export type FaultScenario = Awaited<ReturnType<typeof setUpFaultScenario>>;

export async function setUpFaultScenario(o: {
  dev: KubeRest;
  stable: KubeRest;
  ns: string;
  appsNs: string;
  source: string;
  target: string;
  apps: number;
  delivery: 'patch' | 'git';
  seed: string;
  concurrency?: number;
}) {
  const apps = Array.from({ length: o.apps }, (_, i) => `f${String(i).padStart(3, '0')}`);
  const repo = `faults${o.seed}`;
  const proxy = await startFaultProxy({ target: o.target, failures: 0 });
  const git =
    o.delivery === 'git'
      ? createBareRepo(
          Object.fromEntries(
            apps.map((a) => [`apps/${a}/values.yaml`, `image: ${proxy.host}/stable/${repo}/${a}:v1\n`]),
          ),
        )
      : undefined;
  await ensureNs(o.dev, o.ns);
  for (const c of [o.dev, o.stable]) await ensureNs(c, o.appsNs);
  const devDigest: Record<string, string> = {};
  for (const app of apps) {
    devDigest[app] = (
      await pushTestImage({ host: o.source, repository: `${repo}/${app}`, tag: 'v2.0.0', seed: `${o.seed}-${app}` })
    ).digest;
    const old = await pushTestImage({
      host: o.target,
      repository: `stable/${repo}/${app}`,
      tag: 'v1.0.0',
      seed: `${o.seed}-old-${app}`,
    });
    await applyDeployment(o.dev, o.appsNs, app, `${o.source}/${repo}/${app}:v2.0.0@${devDigest[app]}`);
    await applyDeployment(o.stable, o.appsNs, app, `${o.target}/stable/${repo}/${app}:v1.0.0@${old.digest}`);
    await applyCr(o.dev, {
      kind: 'Application',
      metadata: { name: app, namespace: o.ns },
      spec: {
        owner: 'team-f',
        image: { repository: `${repo}/${app}` },
        workloads: [{ kind: 'Deployment', name: app }],
      },
    });
  }
  for (const app of apps) await waitReady(o.dev, o.appsNs, app);
  await applyCr(
    o.dev,
    crs.environment(o.ns, 'dev', {
      context: 'dev',
      namespace: o.appsNs,
      registry: { host: o.source, insecure: true },
      delivery: { method: 'patch' },
    }),
  );
  await applyCr(
    o.dev,
    crs.environment(o.ns, 'stable', {
      context: 'stable',
      namespace: o.appsNs,
      registry: { host: proxy.host, prefix: 'stable', insecure: true },
      delivery: git
        ? {
            method: 'git',
            git: { repository: git.url, branch: 'main', path: 'apps/{app}/values.yaml', valuesPath: 'image' },
          }
        : { method: 'patch' },
    }),
  );
  await applyCr(
    o.dev,
    crs.flow(o.ns, 'faults', ['dev', 'stable'], {
      selector: { applications: ['*'] },
      concurrency: o.concurrency ?? 4,
      rolloutTimeoutSeconds: 300,
    }),
  );

  /** Creates plans over `groups` of apps, approved at once by the admin kubeconfig user. */
  async function approvePlans(prefix: string, groups: string[][]): Promise<string[]> {
    const names = groups.map((_, i) => `${prefix}-${i}`);
    await Promise.all(
      groups.map((g, i) =>
        applyCr(o.dev, {
          kind: 'PromotionPlan',
          metadata: { name: names[i], namespace: o.ns },
          spec: {
            flow: 'faults',
            from: 'dev',
            to: 'stable',
            candidates: g.map((application) => ({
              application,
              from: { tag: 'v2.0.0', digest: devDigest[application] },
            })),
            approvals: [{ user: 'kpromo-admin' }],
          },
        } as never),
      ),
    );
    return names;
  }

  /** The GitOps agent's part (Flux is not in this harness yet): apply what the repo says. */
  async function gitopsSync() {
    if (!git) return;
    for (const app of apps) {
      const want = (parseYaml(git.read(`apps/${app}/values.yaml`)) as { image: string }).image;
      if (want.includes('@') && (await deploymentImage(o.stable, o.appsNs, app)) !== want)
        await applyDeployment(o.stable, o.appsNs, app, want);
    }
  }

  /** Waits for every plan to finish (or `timeoutMs`) and measures what the fault table reports. */
  async function outcome(plans: string[], since: number, timeoutMs = 300_000): Promise<Outcome> {
    const deadline = Date.now() + timeoutMs;
    let final: PromotionPlan[] = [];
    for (;;) {
      await gitopsSync();
      final = await Promise.all(plans.map((p) => getPlan(o.dev, o.ns, p)));
      const done = final.every((p) => ['Complete', 'Incomplete', 'Failed'].includes(p.status?.phase ?? ''));
      if (done || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const convergeMs = Date.now() - since;
    let duplicateCopies = 0;
    let lostStatusEntries = 0;
    for (const p of final)
      for (const c of p.spec.candidates) {
        if (appOf(p, c.application)?.phase !== 'Succeeded') lostStatusEntries++;
        const r = await fetch(`http://${o.target}/v2/stable/${repo}/${c.application}/tags/list`);
        const tags = ((await r.json()) as { tags?: string[] }).tags ?? [];
        duplicateCopies += Math.max(0, tags.filter((t) => t.startsWith('v2.0.0-')).length - 1);
      }
    let duplicateCommits = 0;
    if (git) {
      const log = git.log();
      for (const app of apps)
        duplicateCommits += Math.max(0, log.filter((m) => m.startsWith(`Promote ${app} to `)).length - 1);
    }
    return {
      converged: final.every((p) => p.status?.phase === 'Complete'),
      duplicateCopies,
      duplicateCommits,
      lostStatusEntries,
      convergeMs,
    };
  }

  return {
    apps,
    proxy,
    git,
    devDigest,
    approvePlans,
    outcome,
    async cleanup() {
      await proxy.stop();
      await deleteNs(o.dev, o.ns);
      for (const c of [o.dev, o.stable]) await deleteNs(c, o.appsNs);
    },
  };
}

/** Splits `items` into `n` groups of (nearly) equal size. */
export const chunk = <T>(items: readonly T[], n: number): T[][] =>
  Array.from({ length: n }, (_, i) => items.filter((_, j) => j % n === i));
