// Fault injection on the local clusters with real registries and git: every fault must end with the
// plan Complete, no second copy, no second commit and no lost status entry. With git delivery upstream
// Flux (test/flux) applies the repository to stable, and kpromo's verdict waits for it. Each fault
// has namespaces, a registry proxy and controller processes of its own, so this file runs beside
// the others; the apiserver restart, which every file would see, is apiserverRestart.int.test.ts.
// (controller/bench/faults.ts runs the same faults repeatedly and prints the table
// docs/benchmarks.md quotes.)
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { needComponents, waitFor } from '@kpromo/test-harness';
import { getPlan } from '@kpromo/test-harness/controller';
import { describe, expect, it } from 'vitest';
import { faultInjection } from './support/faultInjection.js';

// Built before this file's hooks run (in the background on a fresh machine): test/cluster/need.ts.
await needComponents('flux');

const { dev, scenario, controller, expectClean, expectAppliedByFlux } = faultInjection();
// Flux's 5 s intervals (fetch, then apply) add to every git rollout: room for setup, run and cleanup.
const GIT_TEST_MS = 360_000;

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
    expectClean('kill-copy', await s.outcome([plan], t0));
  });

  it(
    'controller SIGKILLed during rollouts with git delivery: no second commit',
    async () => {
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
      expectClean('kill-git', await s.outcome([plan], t0));
      await expectAppliedByFlux(s, plan);
    },
    GIT_TEST_MS,
  );

  // An etcd restart takes every cluster down at once and disturbs the suites after it: it runs in
  // controller/bench/faults.ts (docs/benchmarks.md table), not here.

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
    expectClean('registry', await s.outcome([plan], t0));
  });

  it(
    'the git remote rejects pushes while another writer keeps pushing',
    async () => {
      const s = await scenario('git-race', 'git');
      // Another writer pushes to the same branch every 100 ms while the plan runs, over the same HTTP
      // server as Flux and kpromo with the same credentials (a header, not in the URL). Its git runs
      // asynchronously: the server answers from this process's event loop.
      const work = mkdtempSync(join(tmpdir(), 'kpromo-other-writer-'));
      const { username, password } = s.gitops!.auth;
      const basic = Buffer.from(`${username}:${password}`).toString('base64');
      const g = (...args: string[]) =>
        promisify(execFile)('git', args, {
          cwd: work,
          timeout: 30_000,
          env: {
            ...process.env,
            GIT_AUTHOR_NAME: 'o',
            GIT_AUTHOR_EMAIL: 'o@x',
            GIT_COMMITTER_NAME: 'o',
            GIT_COMMITTER_EMAIL: 'o@x',
            GIT_CONFIG_COUNT: '1',
            GIT_CONFIG_KEY_0: 'http.extraHeader',
            GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
          },
        });
      await g('clone', '-q', s.gitops!.url, '.');
      let others = 0;
      let stop = false;
      const writer = (async () => {
        while (!stop) {
          try {
            await g('pull', '-q', '--rebase');
            writeFileSync(join(work, 'other.txt'), String(others));
            await g('add', 'other.txt');
            await g('commit', '-q', '-m', `other writer ${others}`);
            await g('push', '-q', 'origin', 'HEAD:main');
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
      expectClean('git-race', o);
      // Flux applied the branch with everyone's commits on it: kpromo's changes are in what stable runs.
      await expectAppliedByFlux(s, plan);
    },
    GIT_TEST_MS,
  );
});
