import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';

import {
  cleanClusters,
  clustersStatus,
  ensureClusters,
  runningControllerManagerQps,
  stopClusters,
} from './controlPlane.js';
import { freePortBlock } from './ports.js';

// A private one-cluster control plane (own state dir and ports) so start/stop/clean can be exercised
// without disturbing the shared dev/stable/prod clusters other tests use.
describe('local control plane lifecycle', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kpromo-lifecycle-'));
  let opts: { stateDir: string; clusters: string[]; basePort: number; controllerManagerQps: number };

  afterAll(async () => {
    if (opts) await cleanClusters(opts);
  });

  it('starts a named cluster, reuses it on a second start, stops and cleans idempotently', async () => {
    const base = await freePortBlock();
    opts = { stateDir: dir, clusters: ['solo'], basePort: base, controllerManagerQps: 37 };

    const first = await ensureClusters(opts);
    expect(first.clusters).toEqual([
      { name: 'solo', context: 'solo', server: `https://127.0.0.1:${base + 10}`, port: base + 10 },
    ]);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(first.kubeconfigPath);
    expect(kc.getContexts().map((c) => c.name)).toEqual(['solo']);
    const version = await kc.makeApiClient(k8s.VersionApi).getCode();
    expect(version.gitVersion).toMatch(/^v1\.\d+\.\d+/);

    const pids = () =>
      ['etcd.pid', 'solo/kube-apiserver.pid', 'solo/kwok.pid'].map((f) => readFileSync(join(dir, f), 'utf8'));
    const before = pids();
    const t = Date.now();
    await ensureClusters(opts);
    expect(pids()).toEqual(before);
    expect(Date.now() - t).toBeLessThan(30_000);
    expect(clustersStatus(opts).every((s) => s.running)).toBe(true);
    // The controller-manager runs with the QPS asked for (its own command line says so).
    expect(runningControllerManagerQps('solo', opts)).toBe(37);

    expect(await stopClusters(opts)).toBe(5);
    expect(clustersStatus(opts).some((s) => s.running)).toBe(false);
    expect(runningControllerManagerQps('solo', opts)).toBeUndefined();
    expect(await stopClusters(opts)).toBe(0);

    await cleanClusters(opts);
    expect(existsSync(dir)).toBe(false);
    await cleanClusters(opts);
  });
});
