/**
 * Fault-injection table on the local clusters (real registries, git and, for git delivery, upstream
 * Flux applying the repository to stable; prints figures, asserts nothing). Each row repeats one
 * fault and counts: plans converged (Complete), duplicate copies (a second unique tag for an app),
 * duplicate commits, lost status entries, max time to converge.
 *   yarn bench --only faults                  # full table (SIGKILL runs x10, 20-app plans, 10 x 20 apps at once)
 *   BENCH_ARGS_FAULTS="--quick" yarn bench --only faults
 */
import { parseArgs } from 'node:util';
import {
  applyCrds,
  defaultKubeconfigPath,
  ensureClusters,
  type Flux,
  kubeConfigFor,
  restartComponent,
  startControllerProcess,
  startFlux,
  startRegistry,
} from '@kpromo/test-harness';
import { chunk, getPlan, type Outcome, restFor, setUpFaultScenario } from '@kpromo/test-harness/controller';

const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false } } });
const RUNS = values.quick ? 2 : 10;
const APPS = values.quick ? 6 : 20;
await ensureClusters({ log: () => {} });
const kubeconfig = process.env.KUBECONFIG ?? defaultKubeconfigPath();
const dev = restFor(kubeconfig, 'dev');
const stable = restFor(kubeconfig, 'stable');
await applyCrds(kubeConfigFor('dev', kubeconfig));
const source = await startRegistry({ name: 'faults-source' });
const target = await startRegistry({ name: 'faults-target' });
const RUN = Math.random().toString(36).slice(2, 6);
let seq = 0;
/** Running (leased) only for the git-delivery row. */
let flux: Flux | undefined;

interface Row {
  fault: string;
  runs: Outcome[];
}
const rows: Row[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const untilApps = async (ns: string, plan: string, pred: (phase: string) => boolean) => {
  for (let i = 0; i < 1200; i++) {
    if ((await getPlan(dev, ns, plan)).status?.apps?.some((a) => pred(a.phase))) return;
    await sleep(50);
  }
};

/** One run: a fresh namespace and apps, a controller process, the fault, the measurements. */
async function once(
  delivery: 'patch' | 'git',
  plans: number,
  apps: number,
  fault: (ctx: {
    ns: string;
    names: string[];
    proxy: Awaited<ReturnType<typeof setUpFaultScenario>>['proxy'];
    kill(): Promise<void>;
  }) => Promise<void>,
): Promise<Outcome> {
  const ns = `fbench-${RUN}-${seq++}`;
  const s = await setUpFaultScenario({
    dev,
    stable,
    ns,
    appsNs: `${ns}-apps`,
    source: source.host,
    target: target.host,
    apps,
    delivery,
    flux,
    seed: `${RUN}${seq}`,
    concurrency: 8,
  });
  let ctl = startControllerProcess({ identity: 'ctl-0', kubeconfig, namespace: ns, lease: 'fbench' });
  try {
    const names = await s.approvePlans('p', chunk(s.apps, plans));
    const t0 = Date.now();
    await fault({
      ns,
      names,
      proxy: s.proxy,
      kill: async () => {
        await ctl.stop('SIGKILL');
        ctl = startControllerProcess({
          identity: `ctl-${seq}-${Date.now()}`,
          kubeconfig,
          namespace: ns,
          lease: 'fbench',
        });
      },
    });
    return await s.outcome(names, t0, 600_000);
  } finally {
    await ctl.stop('SIGKILL');
    await s.cleanup();
  }
}

async function row(fault: string, runs: number, fn: () => Promise<Outcome>) {
  const r: Row = { fault, runs: [] };
  rows.push(r);
  for (let i = 0; i < runs; i++) {
    r.runs.push(await fn());
    process.stderr.write(`  ${fault}: run ${i + 1}/${runs} ${JSON.stringify(r.runs.at(-1))}\n`);
  }
}

const phases = ['Copying', 'Writing', 'RollingOut'];
await row(`controller SIGKILL at a random point (${APPS} apps)`, RUNS, () =>
  once('patch', 1, APPS, async ({ ns, names, kill }) => {
    // A random phase to wait for, then a random extra delay: copy, write, rollout or a status write.
    const phase = phases[Math.floor(Math.random() * phases.length)];
    await untilApps(ns, names[0], (p) => p === phase);
    await sleep(Math.random() * 1500);
    await kill();
  }),
);
flux = await startFlux({ kubeconfig, log: (m) => process.stderr.write(`  [flux] ${m}\n`) });
await row(`controller SIGKILL, git delivery (${APPS} apps)`, Math.max(1, RUNS / 5), () =>
  once('git', 1, APPS, async ({ ns, names, kill }) => {
    await untilApps(ns, names[0], (p) => p === 'RollingOut');
    await kill();
  }),
);
// Releases this process's lease (Flux stops unless a test run still holds one): not up during the etcd restart.
await flux.stop();
flux = undefined;
await row('target kube-apiserver restart mid-plan', Math.max(1, RUNS / 5), () =>
  once('patch', 1, APPS, async ({ ns, names }) => {
    await untilApps(ns, names[0], (p) => p === 'Writing' || p === 'RollingOut');
    await restartComponent('stable/kube-apiserver', { kill: true });
  }),
);
await row('etcd restart mid-plan (all clusters)', 1, () =>
  once('patch', 1, APPS, async ({ ns, names }) => {
    await untilApps(ns, names[0], (p) => p !== 'Pending');
    await restartComponent('etcd', { kill: true });
  }),
);
await row('registry 5xx, then hangs, then resets (2.5 s each)', 1, () =>
  once('patch', 1, APPS, async ({ proxy }) => {
    proxy.setMode('error');
    for (let i = 0; i < 1200 && proxy.failed() === 0; i++) await sleep(50);
    for (const m of ['error', 'hang', 'reset'] as const) {
      proxy.setMode(m);
      await sleep(2500);
    }
    proxy.setMode('pass');
  }),
);
await row(`10 plans approved at once over ${APPS * 10} apps`, 1, () => once('patch', 10, APPS * 10, async () => {}));

await source.stop();
await target.stop();

const pad = (s: string | number, n: number) => String(s).padEnd(n);
console.log(
  `\n${pad('fault', 52)}${pad('runs', 6)}${pad('converged', 11)}${pad('dup copies', 12)}${pad('dup commits', 13)}${pad('lost status', 13)}max converge`,
);
for (const r of rows) {
  const sum = (k: keyof Outcome) => r.runs.reduce((a, o) => a + Number(o[k]), 0);
  console.log(
    `${pad(r.fault, 52)}${pad(r.runs.length, 6)}${pad(`${r.runs.filter((o) => o.converged).length}/${r.runs.length}`, 11)}${pad(sum('duplicateCopies'), 12)}${pad(sum('duplicateCommits'), 13)}${pad(sum('lostStatusEntries'), 13)}${(Math.max(...r.runs.map((o) => o.convergeMs)) / 1000).toFixed(1)} s`,
  );
}
