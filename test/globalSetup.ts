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

/**
 * Integration tests share one local control plane (reused when already running, as .ci/run starts it
 * first) and get two fresh OCI registries per run, each with its own storage folder.
 */
export default async function setup(project: TestProject) {
  const cp = await ensureClusters({ log: (m) => console.log(`[harness] ${m}`) });
  process.env.KUBECONFIG = cp.kubeconfigPath;
  // Test files that need Flux start it lazily (startFlux) under this run's lease; teardown releases it.
  process.env.KPROMO_TEST_RUN = `run-${Date.now()}:${process.pid}`;
  const source = await startRegistry({ name: 'registry-source' });
  const target = await startRegistry({ name: 'registry-target' });
  project.provide('kubeconfig', cp.kubeconfigPath);
  project.provide(
    'clusters',
    cp.clusters.map((c) => c.name),
  );
  project.provide('registries', { source: source.host, target: target.host });
  return async () => {
    await source.stop();
    await target.stop();
    await releaseFlux();
  };
}
