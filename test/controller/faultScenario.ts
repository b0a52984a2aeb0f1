// A release on the local clusters for fault injection (controller/test/faults.int.test.ts,
// controller/bench/faults.ts and bench/flood.ts): N apps dev -> stable, real registries (the target one behind a
// switchable fault proxy), patch or git delivery, and the measurements the fault table reports.
// With git delivery the GitOps agent is upstream Flux (test/flux): source-controller pulls the repo
// over smart HTTP and kustomize-controller, running against dev, applies each app's folder to stable.
import type { PromotionPlan } from '@kpromo/api';
import type { KubeRest } from '@kpromo/controller/kube';
import { type Flux, headCommit, kustomizeAppFiles, startFaultProxy } from '../index.js';
import { applyCr, applyDeployment, appOf, crs, deleteNs, ensureNs, getPlan, pushTestImage, waitReady } from './e2e.js';
import { appliedCommit, type Gitops, startGitops } from './gitopsFixture.js';

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
  /** The running Flux (startFlux), required with git delivery. */
  flux?: Flux;
  seed: string;
  concurrency?: number;
}) {
  const apps = Array.from({ length: o.apps }, (_, i) => `f${String(i).padStart(3, '0')}`);
  const repo = `faults${o.seed}`;
  if (o.delivery === 'git' && !o.flux)
    throw new Error(`fault scenario ${o.ns}: git delivery needs a running Flux (pass flux from startFlux)`);
  const proxy = await startFaultProxy({ target: o.target, failures: 0 });
  let gitops: Gitops | undefined;
  /** Undoes what setup got to; each step on its own, as a fault may have left a cluster unreachable. */
  async function cleanup() {
    const steps = [
      () => proxy.stop(),
      // Flux objects first, while Flux runs and the Secrets they use are still there.
      async () => gitops?.stop(),
      () => deleteNs(o.dev, o.ns),
      () => deleteNs(o.dev, o.appsNs),
      () => deleteNs(o.stable, o.appsNs),
    ];
    const errors: unknown[] = [];
    for (const step of steps) await step().catch((e: unknown) => errors.push(e));
    if (errors.length) throw new AggregateError(errors, `cleaning up fault scenario ${o.ns}`);
  }
  const devDigest: Record<string, string> = {};
  try {
    await setUp();
  } catch (e) {
    await cleanup().catch(() => undefined);
    throw e;
  }

  async function setUp() {
    await ensureNs(o.dev, o.ns);
    for (const c of [o.dev, o.stable]) await ensureNs(c, o.appsNs);
    const stableImage: Record<string, string> = {};
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
      stableImage[app] = `${o.target}/stable/${repo}/${app}:v1.0.0@${old.digest}`;
      await applyDeployment(o.dev, o.appsNs, app, `${o.source}/${repo}/${app}:v2.0.0@${devDigest[app]}`);
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
    // stable's Deployments: written by the test (patch delivery), or by Flux from the seed commit (git).
    if (o.delivery === 'git' && o.flux) {
      gitops = await startGitops({
        dev: o.dev,
        flux: o.flux,
        ns: o.ns,
        files: Object.assign(
          {},
          ...apps.map((a) => kustomizeAppFiles({ dir: `apps/${a}`, name: a, image: stableImage[a] })),
        ) as Record<string, string>,
      });
      await applyWithFlux(gitops, apps, o.appsNs);
      for (const app of apps) await waitReady(o.stable, o.appsNs, app, 120_000);
    } else for (const app of apps) await applyDeployment(o.stable, o.appsNs, app, stableImage[app]);
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
        // The verdict waits for Flux (running against dev, the control cluster) to apply the commit.
        delivery: gitops
          ? gitops.gitDelivery({ path: 'apps/{app}/image.yaml', valuesPath: 'data.image', cluster: 'control' })
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
  }

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

  /** Waits for every plan to finish (or `timeoutMs`) and measures what the fault table reports. */
  async function outcome(plans: string[], since: number, timeoutMs = 300_000): Promise<Outcome> {
    const deadline = Date.now() + timeoutMs;
    let final: PromotionPlan[] = [];
    for (;;) {
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
    if (gitops) {
      const log = gitops.repo.log();
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
    repo,
    proxy,
    gitops,
    devDigest,
    approvePlans,
    outcome,
    cleanup,
  };
}

/**
 * One Kustomization an app of the repository, applying its folder to stable's `appsNs` from dev (where
 * Flux runs); resolves once Flux has applied the seed commit. Orphan: stable may be down at teardown.
 */
async function applyWithFlux(gitops: Gitops, apps: string[], appsNs: string): Promise<void> {
  for (const app of apps) await gitops.addApp(app, appsNs, { cluster: 'stable', orphan: true });
  const seed = headCommit(gitops.repo.dir);
  for (const app of apps)
    await gitops.waitKustomization(app, 'applies the seed', (s) => appliedCommit(s) === seed, 120_000);
}

/** Splits `items` into `n` groups of (nearly) equal size. */
export const chunk = <T>(items: readonly T[], n: number): T[][] =>
  Array.from({ length: n }, (_, i) => items.filter((_, j) => j % n === i));
