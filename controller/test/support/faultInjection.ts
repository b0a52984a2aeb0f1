// The fault-injection files' shared set-up (controller/test/faults.int.test.ts runs beside the other
// integration files; apiserverRestart.int.test.ts, which restarts a kube-apiserver every file uses,
// runs alone): a six-app release per fault in namespaces of its own, controller processes that the
// fault kills, and the clean outcome every fault must end with.
import { applyCrds, type Flux, kubeConfigFor, startControllerProcess, startFlux } from '@kpromo/test-harness';
import {
  appOf,
  type FaultScenario,
  getDeployment,
  getPlan,
  restFor,
  setUpFaultScenario,
} from '@kpromo/test-harness/controller';
import { afterAll, expect, inject } from 'vitest';

export type Scenario = FaultScenario & { ns: string; appsNs: string };

/** Call at the top of a file: its scenarios and controllers are removed after the file. */
export function faultInjection() {
  const RUN = Math.random().toString(36).slice(2, 7);
  const kubeconfig = inject('kubeconfig');
  const { source, target } = inject('registries');
  const dev = restFor(kubeconfig, 'dev');
  const stable = restFor(kubeconfig, 'stable');
  const cleanups: Array<() => Promise<void>> = [];
  let flux: Flux | undefined;

  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  async function scenario(name: string, delivery: 'patch' | 'git' = 'patch'): Promise<Scenario> {
    await applyCrds(kubeConfigFor('dev', kubeconfig));
    if (delivery === 'git') flux ??= await startFlux({ kubeconfig, log: (m) => console.log(`[flux] ${m}`) });
    const ns = `fault-${name}-${RUN}`;
    const appsNs = `${ns}-apps`;
    const s = await setUpFaultScenario({
      dev,
      stable,
      ns,
      appsNs,
      source,
      target,
      apps: 6,
      delivery,
      flux,
      seed: `${name}${RUN}`,
      concurrency: 3,
    });
    cleanups.push(s.cleanup);
    return { ...s, ns, appsNs };
  }

  function controller(ns: string, identity: string) {
    const p = startControllerProcess({ identity, kubeconfig, namespace: ns, lease: 'faults' });
    cleanups.push(() => p.stop('SIGKILL'));
    return p;
  }

  /** Asserts a clean outcome; logs it first (the figures, convergence time included, for the run's log). */
  function expectClean(fault: string, o: Awaited<ReturnType<FaultScenario['outcome']>>) {
    console.log(`[faults] ${fault}: ${JSON.stringify(o)}`);
    expect(o).toMatchObject({ converged: true, duplicateCopies: 0, duplicateCommits: 0, lostStatusEntries: 0 });
  }

  /**
   * Every app of a git-delivered plan runs its promoted digest on stable, and only Flux's
   * kustomize-controller (and the Deployment controller's status) wrote its Deployment there.
   */
  async function expectAppliedByFlux(s: Scenario, plan: string) {
    const done = await getPlan(dev, s.ns, plan);
    for (const app of s.apps) {
      const a = appOf(done, app);
      expect(a?.commit).toMatch(/^[0-9a-f]{40}$/);
      const d = await getDeployment(stable, s.appsNs, app);
      expect(d.spec?.template?.spec?.containers?.[0]?.image).toBe(
        `${s.proxy.host}/stable/${s.repo}/${app}:${a?.targetTag}@${s.devDigest[app]}`,
      );
      const managers = (
        await stable.get<{ metadata: { managedFields?: Array<{ manager: string }> } }>(
          `/apis/apps/v1/namespaces/${s.appsNs}/deployments/${app}`,
        )
      ).metadata.managedFields?.map((f) => f.manager);
      expect(managers).toContain('kustomize-controller');
      expect(managers?.filter((m) => m !== 'kustomize-controller' && m !== 'kube-controller-manager')).toEqual([]);
    }
  }

  return { dev, scenario, controller, expectClean, expectAppliedByFlux };
}
