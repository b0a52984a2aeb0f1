// Fault injection on the local clusters with real registries and git: every fault must end with the
// plan Complete, no second copy, no second commit and no lost status entry. (controller/bench/faults.ts
// runs the same faults repeatedly and prints the table the README quotes.)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyCrds, kubeConfigFor, restartComponent, startControllerProcess, waitFor } from '@kpromo/test-harness';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { appOf, getPlan, restFor } from './e2eHelpers.js';
import { type FaultScenario, setUpFaultScenario } from './faultScenario.js';

const RUN = Math.random().toString(36).slice(2, 7);
const kubeconfig = inject('kubeconfig');
const { source, target } = inject('registries');
const dev = restFor(kubeconfig, 'dev');
const stable = restFor(kubeconfig, 'stable');
const cleanups: Array<() => Promise<void>> = [];

afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function scenario(name: string, delivery: 'patch' | 'git' = 'patch'): Promise<FaultScenario & { ns: string }> {
  await applyCrds(kubeConfigFor('dev', kubeconfig));
  const ns = `fault-${name}-${RUN}`;
  const s = await setUpFaultScenario({
    dev,
    stable,
    ns,
    appsNs: `${ns}-apps`,
    source,
    target,
    apps: 6,
    delivery,
    seed: `${name}${RUN}`,
    concurrency: 3,
  });
  cleanups.push(s.cleanup);
  return { ...s, ns };
}

function controller(ns: string, identity: string) {
  const p = startControllerProcess({ identity, kubeconfig, namespace: ns, lease: 'faults' });
  cleanups.push(() => p.stop('SIGKILL'));
  return p;
}

const expectClean = (o: Awaited<ReturnType<FaultScenario['outcome']>>) =>
  expect(o).toMatchObject({ converged: true, duplicateCopies: 0, duplicateCommits: 0, lostStatusEntries: 0 });

describe('fault injection', () => {
  it('controller SIGKILLed while copying: a new process resumes from the journal without copying twice', async () => {
    const s = await scenario('kill-copy');
    const a = controller(s.ns, 'ctl-1');
    const [plan] = await s.approvePlans('p', [s.apps]);
    const t0 = Date.now();
    await waitFor(
      'an app copying',
      async () => (await getPlan(dev, s.ns, plan)).status?.apps?.some((x) => x.phase === 'Copying') || undefined,
      60_000,
      20,
    );
    await a.stop('SIGKILL');
    controller(s.ns, 'ctl-2');
    expectClean(await s.outcome([plan], t0));
  });

  it('controller SIGKILLed during rollouts with git delivery: no second commit', async () => {
    const s = await scenario('kill-git', 'git');
    const a = controller(s.ns, 'ctl-1');
    const [plan] = await s.approvePlans('p', [s.apps]);
    const t0 = Date.now();
    await waitFor(
      'an app rolling out',
      async () => (await getPlan(dev, s.ns, plan)).status?.apps?.some((x) => x.phase === 'RollingOut') || undefined,
      90_000,
      20,
    );
    await a.stop('SIGKILL');
    controller(s.ns, 'ctl-2');
    const o = await s.outcome([plan], t0);
    expectClean(o);
    const done = await getPlan(dev, s.ns, plan);
    for (const app of s.apps) expect(appOf(done, app)?.commit).toMatch(/^[0-9a-f]{40}$/);
  });

  it('the target cluster apiserver restarts mid-plan', async () => {
    const s = await scenario('apiserver');
    controller(s.ns, 'ctl-1');
    const [plan] = await s.approvePlans('p', [s.apps]);
    const t0 = Date.now();
    await waitFor(
      'an app written',
      async () => (await getPlan(dev, s.ns, plan)).status?.apps?.some((x) => x.written) || undefined,
      60_000,
      20,
    );
    await restartComponent('stable/kube-apiserver', { kill: true });
    expectClean(await s.outcome([plan], t0));
  });

  // An etcd restart takes every cluster down at once and disturbs the suites after it: it runs in
  // controller/bench/faults.ts (README table), not here.

  it('the target registry answers 5xx, hangs, then resets connections for a while', async () => {
    const s = await scenario('registry');
    controller(s.ns, 'ctl-1');
    const [plan] = await s.approvePlans('p', [s.apps]);
    const t0 = Date.now();
    // Faults from the first registry request on (the controller process needs a moment to start).
    s.proxy.setMode('error');
    await waitFor('the controller reaching the registry', async () => s.proxy.failed() > 0 || undefined, 60_000, 20);
    for (const mode of ['error', 'hang', 'reset'] as const) {
      s.proxy.setMode(mode);
      await new Promise((r) => setTimeout(r, 2_500));
    }
    s.proxy.setMode('pass');
    expectClean(await s.outcome([plan], t0));
  });

  it('the git remote rejects pushes while another writer keeps pushing', async () => {
    const s = await scenario('git-race', 'git');
    // Another writer pushes to the same branch every 100 ms while the plan runs.
    const work = mkdtempSync(join(tmpdir(), 'kpromo-other-writer-'));
    const g = (...args: string[]) =>
      execFileSync('git', args, {
        cwd: work,
        env: {
          ...process.env,
          GIT_AUTHOR_NAME: 'o',
          GIT_AUTHOR_EMAIL: 'o@x',
          GIT_COMMITTER_NAME: 'o',
          GIT_COMMITTER_EMAIL: 'o@x',
        },
        stdio: 'ignore',
      });
    g('clone', '-q', s.git!.url, '.');
    let others = 0;
    let stop = false;
    const writer = (async () => {
      while (!stop) {
        try {
          g('pull', '-q', '--rebase');
          writeFileSync(join(work, 'other.txt'), String(others));
          g('add', 'other.txt');
          g('commit', '-q', '-m', `other writer ${others}`);
          g('push', '-q', 'origin', 'HEAD:main');
          others++;
        } catch {
          // lost a race with the controller: try again
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    controller(s.ns, 'ctl-1');
    const [plan] = await s.approvePlans('p', [s.apps]);
    const o = await s.outcome([plan], Date.now());
    stop = true;
    await writer;
    expect(others).toBeGreaterThan(5);
    expectClean(o);
  });
});
