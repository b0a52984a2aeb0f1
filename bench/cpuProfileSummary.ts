/**
 * Where a process's CPU went, from a V8 CPU profile (`node --cpu-prof`): self time by package and by
 * function, busiest first. Used with the exporter benchmark:
 *
 *   BENCH_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/exp-prof" yarn tsx bench/exporter.ts --compiled --n 2000
 *   yarn tsx bench/cpuProfileSummary.ts /tmp/exp-prof/*.cpuprofile
 *
 * `--compiled` keeps npm packages outside the bundle, so their time is named by package.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The package (or runtime part) a frame belongs to. */
export function packageOf(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  if (url.startsWith('node:')) return 'node (built-in modules)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('wasm://')) return 'wasm';
  return url.replace(/^file:\/\//, '').replace(/^.*\/(exporter|packages|controller)\//, '$1/');
}

/** Self time per key, in ms, from sample counts weighted by their time deltas. */
export function selfTimes(p: Profile, key: (n: ProfileNode) => string): Map<string, number> {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const out = new Map<string, number>();
  p.samples.forEach((id, i) => {
    const n = byId.get(id);
    if (!n) return;
    const k = key(n);
    out.set(k, (out.get(k) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000);
  });
  return out;
}

function print(title: string, m: Map<string, number>, top: number) {
  const idle = (k: string) => k.startsWith('(idle)');
  const total = [...m.entries()].filter(([k]) => !idle(k)).reduce((a, [, v]) => a + v, 0);
  console.log(`${title} (busy ${(total / 1000).toFixed(2)} s; idle excluded)`);
  for (const [k, v] of [...m.entries()]
    .filter(([k]) => !idle(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top))
    console.log(`  ${(v / 1000).toFixed(3).padStart(7)} s ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
}

if (process.argv[1]?.endsWith('cpuProfileSummary.ts'))
  for (const file of process.argv.slice(2)) {
    const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
    console.log(file);
    print(
      'by package',
      selfTimes(p, (n) => packageOf(n.callFrame.url, n.callFrame.functionName)),
      15,
    );
    print(
      'by function',
      selfTimes(
        p,
        (n) =>
          `${n.callFrame.functionName || '(anonymous)'} ${packageOf(n.callFrame.url, n.callFrame.functionName)}:${n.callFrame.lineNumber + 1}`,
      ),
      20,
    );
  }
