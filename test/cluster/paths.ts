import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { componentUsed } from './need.js';

export const HARNESS_DIR = dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = resolve(HARNESS_DIR, '../..');

/** Build cache (binaries). Override with PROMO_CACHE_DIR to share it across clones, as .ci/run does. */
export function cacheRoot(): string {
  return process.env.PROMO_CACHE_DIR ?? join(REPO_ROOT, '.cache');
}

/** Runtime state (certs, etcd data, logs, pids, kubeconfig); git-ignored. */
export function stateDir(): string {
  return process.env.KPROMO_STATE_DIR ?? join(REPO_ROOT, '.cache/clusters');
}

export function defaultKubeconfigPath(): string {
  return join(stateDir(), 'kubeconfig');
}

export function versions(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(join(HARNESS_DIR, 'versions.env'), 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(\S+)/.exec(line);
    if (m) out[m[1]] = m[2];
  }
  return out;
}

/**
 * Runs one of the harness's build scripts (`script` relative to test/cluster) against the shared
 * cache and returns the last line it printed (each prints what it built or found). `quiet` keeps
 * its build log (stderr) out of the test output; a failure's error still carries it.
 */
export function runBuildScript(script: string, args: string[] = [], o: { quiet?: boolean } = {}): string {
  const out = execFileSync('bash', [join(HARNESS_DIR, script), ...args], {
    env: { ...process.env, PROMO_CACHE_DIR: cacheRoot() },
    stdio: ['ignore', 'pipe', o.quiet ? 'pipe' : 'inherit'],
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  return out.trim().split('\n').at(-1) ?? '';
}

/** The CRD files (`crds/*.yaml`, sorted) a Flux or Argo build left in `dir`. */
export const crdFiles = (dir: string): string[] =>
  existsSync(join(dir, 'crds'))
    ? readdirSync(join(dir, 'crds'))
        .filter((f) => f.endsWith('.yaml'))
        .sort()
        .map((f) => join(dir, 'crds', f))
    : [];

export const BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok'] as const;
export type Binary = (typeof BINARIES)[number];

/** Where the control plane's binaries are (or will be) for the pinned versions. */
export function binariesDir(): string {
  const v = versions();
  return join(
    cacheRoot(),
    'k8s',
    `k8s-${v.K8S_VERSION}_etcd-${v.ETCD_VERSION}_kwok-${v.KWOK_VERSION}_r${v.BUILD_REV}`,
    'bin',
  );
}

/** Directory holding the built binaries; builds them (minutes, once) when absent. */
export function ensureBinaries(log: (s: string) => void = () => {}): string {
  const dir = binariesDir();
  if ([...BINARIES, 'kwok-stages.yaml'].every((b) => existsSync(join(dir, b)))) return dir;
  log(`building control-plane binaries into ${dir} (first time only; needs Go)…`);
  return runBuildScript('build.sh', ['k8s']) || dir;
}

/** Path of the helm CLI (HELM_VERSION in versions.env) the chart tests run; builds it (minutes, once) when absent. */
export function ensureHelm(log: (s: string) => void = () => {}): string {
  componentUsed('helm');
  const v = versions();
  const bin = join(cacheRoot(), 'helm', `helm-${v.HELM_VERSION}_r${v.BUILD_REV}`, 'bin', 'helm');
  if (existsSync(bin)) return bin;
  log(`building helm ${v.HELM_VERSION} into ${dirname(bin)} (first time only; needs Go)…`);
  return join(runBuildScript('build.sh', ['helm']) || dirname(bin), 'helm');
}

/**
 * Path of the OCI registry (CNCF distribution, REGISTRY_VERSION in versions.env) built from its Go
 * module; builds it (a minute or two, once) when absent. KPROMO_REGISTRY_BIN overrides it.
 */
export function ensureRegistry(log: (s: string) => void = () => {}): string {
  if (process.env.KPROMO_REGISTRY_BIN) return process.env.KPROMO_REGISTRY_BIN;
  const v = versions();
  const bin = join(cacheRoot(), 'registry', `registry-${v.REGISTRY_VERSION}_r${v.BUILD_REV}`, 'bin', 'registry');
  if (existsSync(bin)) return bin;
  log(`building the OCI registry ${v.REGISTRY_VERSION} into ${dirname(bin)} (first time only; needs Go)…`);
  return join(runBuildScript('build.sh', ['registry']) || dirname(bin), 'registry');
}
