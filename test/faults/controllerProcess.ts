import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createMemoryCgroup } from '../cluster/cgroup.js';
import { REPO_ROOT } from '../cluster/paths.js';

export interface ControllerProcess {
  identity: string;
  child: ChildProcess;
  logFile: string;
  /** With memoryLimitMiB: how often the cgroup's limit was hit so far. */
  memoryLimitHits?: () => number;
  /** SIGKILL (crash) or SIGTERM (graceful) and wait for the exit. */
  stop(signal?: 'SIGKILL' | 'SIGTERM'): Promise<void>;
}

/**
 * The controller as a real separate process (`kpromo-controller run --config …`), so faults hit it
 * the way they hit a pod: SIGKILL, SIGSTOP/SIGCONT. `config` is merged over a config for the dev
 * (control) context with leader election on a short lease.
 */
export function startControllerProcess(o: {
  identity: string;
  kubeconfig: string;
  namespace: string;
  lease: string;
  config?: Record<string, unknown>;
  /** Namespaces of the clusters its Environments deliver into (clusterAccess targetNamespaces; default `<namespace>-apps`). */
  targetNamespaces?: string[];
  /**
   * Run the production bundle (`yarn build`: controller/dist) with plain node instead of the sources
   * through tsx, with the environment the image sets (MALLOC_ARENA_MAX=2, deploy/image/images.ts).
   */
  compiled?: boolean;
  /** Node flags before the entry (e.g. `--heapsnapshot-signal=SIGUSR2` for a benchmark). */
  nodeFlags?: string[];
  /** Runs it in a memory cgroup of this size (MiB), as a pod with `resources.limits.memory` (root only). */
  memoryLimitMiB?: number;
}): ControllerProcess {
  const dir = mkdtempSync(join(tmpdir(), `kpromo-${o.identity}-`));
  const cfg = join(dir, 'config.yaml');
  writeFileSync(
    cfg,
    stringify({
      kubeconfig: o.kubeconfig,
      context: 'dev',
      namespaces: [o.namespace],
      defaultNamespace: o.namespace,
      logLevel: 'info',
      server: { host: '127.0.0.1', port: 0 },
      // Environments in the test namespace may use the harness clusters (none without an entry) and
      // deliver into its apps namespaces there (`<namespace>-apps`, as the fault scenarios create it).
      clusterAccess: [
        {
          namespaces: [o.namespace],
          contexts: ['dev', 'stable', 'prod'],
          targetNamespaces: o.targetNamespaces ?? [`${o.namespace}-apps`],
        },
      ],
      // The harness registries listen on loopback, which registry traffic may reach only when allowed.
      egress: { allowedCidrs: ['127.0.0.1/32'] },
      leaderElection: {
        enabled: true,
        namespace: o.namespace,
        name: o.lease,
        identity: o.identity,
        leaseDurationSeconds: 4,
        renewIntervalMs: 1000,
      },
      ...o.config,
    }),
  );
  const logFile = join(dir, 'controller.log');
  const fd = openSync(logFile, 'a');
  const entry = o.compiled
    ? [join(REPO_ROOT, 'controller/dist/kpromo-controller.mjs')]
    : ['--import', 'tsx', join(REPO_ROOT, 'controller/src/main.ts')];
  const cgroup = o.memoryLimitMiB ? createMemoryCgroup(`kpromo-${o.identity}`, o.memoryLimitMiB) : undefined;
  const argv = [...(cgroup?.wrap ?? []), process.execPath, ...(o.nodeFlags ?? []), ...entry, 'run', '--config', cfg];
  const child = spawn(argv[0], argv.slice(1), {
    cwd: REPO_ROOT,
    stdio: ['ignore', fd, fd],
    env: {
      ...process.env,
      KUBECONFIG: o.kubeconfig,
      ...(o.compiled ? { NODE_OPTIONS: '', MALLOC_ARENA_MAX: '2' } : {}),
    },
  });
  closeSync(fd);
  const exited = new Promise<void>((r) =>
    child.once('exit', () => {
      cgroup?.remove();
      r();
    }),
  );
  return {
    identity: o.identity,
    child,
    logFile,
    memoryLimitHits: cgroup ? () => cgroup.limitHits() : undefined,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGCONT');
        child.kill(signal);
      }
      await exited;
    },
  };
}
