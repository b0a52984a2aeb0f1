/**
 * Benchmark (a script, not a test): `npx tsx controller/bench/controller.ts`.
 * Prints candidate computation time for 500 apps x 5 environments from an in-memory cache (the same
 * CacheView the live informers implement) and the memory held by 5,000 cached Applications.
 */

import { app, deployment, env, flow as flowOf } from '@kpromo/test-harness/objects';
import { computeCandidates, stagePairs } from '../src/candidates/computeCandidates.js';
import { runningVersion } from '../src/candidates/runningVersion.js';
import { MemoryCache } from '../src/kube/memoryCache.js';

const ENVS = ['dev', 'qa', 'stable', 'preprod', 'prod'];
const digest = (i: number, e: number) => `sha256:${(i * 7919 + e).toString(16).padStart(64, '0')}`;

const application = (i: number) => app(`app-${i}`, { owner: `team-${i % 20}` }, { tier: i % 3 ? 'web' : 'batch' });
const environment = (name: string) => env(name, { registry: { host: `${name}.registry:5000` } });

function buildCache(apps: number): MemoryCache {
  const c = new MemoryCache();
  c.envs = ENVS.map(environment);
  c.apps = Array.from({ length: apps }, (_, i) => application(i));
  for (let i = 0; i < apps; i++) {
    ENVS.forEach((e, ei) => {
      // Later stages lag behind for about half the apps, so there are real candidates at every step.
      const behind = (i + ei) % 2 === 0 ? ei : 0;
      c.workloads.set(
        `${e}/Deployment/app-${i}`,
        deployment(`app-${i}`, `${e}.registry:5000/shop/app-${i}:v1.${10 - behind}.0@${digest(i, behind)}`),
      );
    });
  }
  return c;
}

const flow = flowOf(ENVS, { selector: { applications: ['app-*'] } });

function allCandidates(c: MemoryCache): number {
  const envs = new Map(c.envs.map((e) => [e.metadata.name, e]));
  let n = 0;
  for (const p of stagePairs(flow)) {
    n += computeCandidates(flow, c.apps, (a, e) => runningVersion(c, a, envs.get(e)!), p.from, p.to).candidates.length;
  }
  return n;
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

const cache = buildCache(500);
for (let i = 0; i < 20; i++) allCandidates(cache); // warm up the JIT
const times: number[] = [];
let count = 0;
for (let i = 0; i < 200; i++) {
  const t = performance.now();
  count = allCandidates(cache);
  times.push(performance.now() - t);
}
console.log(`candidates: 500 apps x 5 environments (4 stage transitions, ${count} candidates)`);
console.log(
  `  median ${pct(times, 50).toFixed(2)} ms, p95 ${pct(times, 95).toFixed(2)} ms, max ${Math.max(...times).toFixed(2)} ms over ${times.length} runs`,
);

global.gc?.();
const before = process.memoryUsage();
const big = buildCache(5000);
global.gc?.();
const after = process.memoryUsage();
console.log(
  `memory: 5,000 Applications x 5 environments cached (${big.apps.length} apps, ${big.workloads.size} workloads)`,
);
console.log(
  `  RSS ${(after.rss / 2 ** 20).toFixed(1)} MiB total, heap +${((after.heapUsed - before.heapUsed) / 2 ** 20).toFixed(1)} MiB for the cache${global.gc ? '' : ' (run with --expose-gc for a tighter figure)'}`,
);
const t = performance.now();
const n = allCandidates(big);
console.log(`candidates: 5,000 apps x 5 environments once: ${(performance.now() - t).toFixed(1)} ms (${n} candidates)`);
