/**
 * Request counting for the benchmarks that run the controller in-process (steadyState.ts, scale.ts):
 * every HTTP request undici sends, seen through its diagnostics channel, and every KubeRest.request
 * call, seen through a wrap; with helpers to fold them by verb and path, percentiles, waiting for a
 * quiet system and memory after GC.
 */
import { spawnSync } from 'node:child_process';
import { subscribe } from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@kpromo/test-harness';
import { KubeRest, type RequestOptions } from '../src/kube/rest.js';

export interface Seen {
  at: number;
  method: string;
  path: string;
  watch: boolean;
  /** scheme://host:port of an undici request (KubeRest calls carry none). */
  origin?: string;
  /** How long a KubeRest call took, once it has ended. */
  ms?: number;
}

export interface RequestLog {
  /** Every HTTP request undici sends (KubeRest, watches, registries, API calls, anything else). */
  http: Seen[];
  /** KubeRest.request calls (the controller's own REST client, impersonated calls included). */
  rest: Seen[];
  /** Leaves `r`'s KubeRest.request calls out of {@link rest} (a benchmark's own client); returns `r`. */
  ignore(r: KubeRest): KubeRest;
}

/**
 * Starts counting (once per process: it wraps KubeRest.prototype.request); `onRest` sees each counted
 * KubeRest call with its body (e.g. to attribute status writes).
 */
export function startRequestLog(onRest?: (method: string, path: string, body: unknown) => void): RequestLog {
  const http: Seen[] = [];
  const rest: Seen[] = [];
  const ignored = new WeakSet<KubeRest>();
  subscribe('undici:request:create', (m) => {
    const r = (m as { request: { method: string; path: string; origin?: string } }).request;
    http.push({
      at: performance.now(),
      method: r.method,
      path: r.path,
      watch: /[?&]watch=(true|1)\b/.test(r.path),
      origin: r.origin,
    });
  });
  const request = KubeRest.prototype.request;
  KubeRest.prototype.request = function (this: KubeRest, method: string, path: string, opts?: RequestOptions) {
    if (ignored.has(this)) return request.call(this, method, path, opts);
    const seen: Seen = { at: performance.now(), method, path, watch: !!opts?.query?.watch };
    rest.push(seen);
    onRest?.(method, path, opts?.body);
    const done = request.call(this, method, path, opts);
    done.then(
      () => {
        seen.ms = performance.now() - seen.at;
      },
      () => {
        seen.ms = performance.now() - seen.at;
      },
    );
    return done;
  } as typeof request;
  return {
    http,
    rest,
    ignore(r) {
      ignored.add(r);
      return r;
    },
  };
}

export const since = (xs: readonly Seen[], t0: number, t1 = Number.POSITIVE_INFINITY) =>
  xs.filter((x) => x.at >= t0 && x.at < t1);

/** GET of a collection (no name after the plural) vs of one object. */
export const isList = (path: string) => {
  const p = path.split('?')[0].split('/').filter(Boolean);
  // /api/v1/<plural> | /api/v1/namespaces/<ns>/<plural> | /apis/<g>/<v>/<plural> | /apis/<g>/<v>/namespaces/<ns>/<plural>
  const rest = p[0] === 'api' ? p.slice(2) : p.slice(3);
  return rest.length === 1 || (rest[0] === 'namespaces' && rest.length === 3);
};
export const verbOf = (s: Seen) =>
  s.watch ? 'WATCH' : s.method === 'GET' ? (isList(s.path) ? 'LIST' : 'GET') : s.method.toUpperCase();

function verbCounts(xs: readonly Seen[]): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const x of xs) counts.set(verbOf(x), (counts.get(verbOf(x)) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1]);
}

export const perMin = (n: number, seconds: number) => ((n * 60) / seconds).toFixed(1);

/** Requests per minute over `seconds`, by verb: `12.0/min (LIST 8.0, WATCH 4.0)`. */
export function byVerb(xs: readonly Seen[], seconds: number): string {
  const parts = verbCounts(xs).map(([v, n]) => `${v} ${perMin(n, seconds)}`);
  return `${perMin(xs.length, seconds)}/min${parts.length ? ` (${parts.join(', ')})` : ''}`;
}

/** Request counts by verb: `42 (LIST 30, WATCH 12)`. */
export function countByVerb(xs: readonly Seen[]): string {
  const parts = verbCounts(xs).map(([v, n]) => `${v} ${n}`);
  return `${xs.length}${parts.length ? ` (${parts.join(', ')})` : ''}`;
}

/** Top request paths with names and resourceVersions folded, for telling where traffic comes from. */
export function topPaths(xs: readonly Seen[], k = 6): string {
  const counts = new Map<string, number>();
  for (const x of xs) {
    const key = `${verbOf(x)} ${x.path.split('?')[0].replace(/\/namespaces\/[^/]+/, '/namespaces/*')}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, k)
    .map(([p, n]) => `    ${String(n).padStart(5)}  ${p}`)
    .join('\n');
}

/** The q-quantile (0..1) of `xs`, one decimal; '-' when empty. */
export const pct = (xs: readonly number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]?.toFixed(1) ?? '-';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `xs` saw no request other than a watch for `quietMs` (at most `maxMs`); returns seconds waited. */
export async function settle(xs: readonly Seen[], quietMs: number, maxMs: number): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const last = xs.filter((x) => !x.watch).at(-1)?.at ?? t0;
    const now = performance.now();
    if (now - Math.max(last, t0) >= quietMs || now - t0 >= maxMs) return (now - t0) / 1000;
    await sleep(1000);
  }
}

/**
 * Builds the production bundles (`yarn build [what]`) through the repo's bootstrap, so a benchmark
 * run with plain `node` (no yarn on PATH) builds as well as one run from `yarn bench`.
 */
export function buildBundle(what?: string): void {
  const built = spawnSync(join(REPO_ROOT, 'kpromo'), ['yarn', 'build', ...(what ? [what] : [])], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  if (built.status !== 0) throw new Error(`yarn build failed: ${built.stderr}${built.error ?? ''}`);
}

/**
 * RSS and peak RSS (VmRSS, VmHWM) of a process now, in bytes, and the CPU seconds it has used (user
 * + system, at the usual 100 ticks/s), from /proc (Linux).
 */
export function processMemory(pid: number | undefined): { rss: number; peak: number; cpuSeconds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(status)?.[1]) * 1024;
  // Fields after the command name (which may contain spaces): utime and stime are the 12th and 13th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { rss: kb('VmRSS'), peak: kb('VmHWM'), cpuSeconds: (Number(after[11]) + Number(after[12])) / 100 };
}

/** process.memoryUsage() after three full GCs (run node with --expose-gc). */
export function gcStats() {
  for (let i = 0; i < 3; i++) global.gc?.();
  return process.memoryUsage();
}
