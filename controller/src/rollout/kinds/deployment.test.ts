import { describe, expect, it } from 'vitest';
import type { Workload } from '../../kube/cacheView.js';
import { deploymentReady } from './deployment.js';

const dep = (spec: Workload['spec'], status: Workload['status'], generation = 2): Workload => ({
  kind: 'Deployment',
  metadata: { name: 'web', generation },
  spec: { replicas: 2, ...spec },
  status,
});

describe('deploymentReady (kubectl rollout status semantics)', () => {
  it.each<[string, Workload, boolean, string]>([
    [
      'generation not observed',
      dep({}, { observedGeneration: 1, updatedReplicas: 2, availableReplicas: 2 }),
      false,
      'waiting for the controller to observe the new generation',
    ],
    [
      'replicas still updating',
      dep({}, { observedGeneration: 2, replicas: 3, updatedReplicas: 1 }),
      false,
      '1 of 2 replicas updated',
    ],
    [
      'old replicas left',
      dep({}, { observedGeneration: 2, replicas: 3, updatedReplicas: 2 }),
      false,
      '1 old replicas pending termination',
    ],
    [
      'updated not available',
      dep({}, { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 1 }),
      false,
      '1 of 2 updated replicas available',
    ],
    [
      'complete',
      dep({}, { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2 }),
      true,
      '2 replicas available',
    ],
  ])('%s', (_, w, ready, message) => {
    expect(deploymentReady(w)).toEqual({ ready, message });
  });

  it('a paused Deployment waits as Paused until it is resumed', () => {
    const w = dep({ paused: true }, { observedGeneration: 2, replicas: 2, updatedReplicas: 0, availableReplicas: 2 });
    expect(deploymentReady(w)).toEqual({
      ready: false,
      paused: true,
      message: 'Deployment is paused (spec.paused) with 0 of 2 replicas updated; resume it to roll out',
    });
    // Paused after it rolled out completely: nothing left to wait for.
    const done = dep(
      { paused: true },
      { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2 },
    );
    expect(deploymentReady(done).ready).toBe(true);
  });
});
