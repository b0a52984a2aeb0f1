import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { ensureClusters } from './cluster/controlPlane.js';
import { releaseFlux } from './flux/flux.js';
import { startRegistry } from './registry/registry.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    clusters: string[];
    registries: { source: string; target: string };
  }
}

interface Shared {
  kubeconfig: string;
  clusters: string[];
  registries: { source: string; target: string };
  stop: () => Promise<void>;
}

/**
 * Both integration projects (`integration`, `integration-alone`) run this in the one Vitest process:
 * the first call starts what the run shares, the second finds it here, and the last teardown stops it.
 */
const SHARED = Symbol.for('kpromo.test.globalSetup');
type Holder = { shared?: Promise<Shared>; users: number };
const registry = globalThis as Record<symbol, Holder>;
registry[SHARED] ??= { users: 0 };
const holder = registry[SHARED];

async function startShared(): Promise<Shared> {
  const cp = await ensureClusters({ log: (m) => console.log(`[harness] ${m}`) });
  process.env.KUBECONFIG = cp.kubeconfigPath;
  // Test files that need Flux start it lazily (startFlux) under this run's lease; teardown releases it.
  process.env.KPROMO_TEST_RUN = `run-${Date.now()}:${process.pid}`;
  const source = await startRegistry({ name: 'registry-source' });
  const target = await startRegistry({ name: 'registry-target' });
  return {
    kubeconfig: cp.kubeconfigPath,
    clusters: cp.clusters.map((c) => c.name),
    registries: { source: source.host, target: target.host },
    stop: async () => {
      await source.stop();
      await target.stop();
      await releaseFlux();
    },
  };
}

/**
 * Integration tests share one local control plane (reused when already running, as .ci/run starts it
 * first) and get two fresh OCI registries per run, each with its own storage folder.
 */
export default async function setup(project: TestProject) {
  holder.users += 1;
  holder.shared ??= startShared();
  const shared = await holder.shared;
  project.provide('kubeconfig', shared.kubeconfig);
  project.provide('clusters', shared.clusters);
  project.provide('registries', shared.registries);
  return async () => {
    holder.users -= 1;
    if (holder.users > 0) return;
    holder.shared = undefined;
    await shared.stop();
  };
}
