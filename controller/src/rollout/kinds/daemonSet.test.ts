import { describe, expect, it } from 'vitest';
import { type DaemonSet, daemonSetKind, daemonSetReady } from './daemonSet.js';

const ds = (status: DaemonSet['status'], strategy = 'RollingUpdate'): DaemonSet => ({
  kind: 'DaemonSet',
  metadata: { name: 'agent', generation: 7 },
  spec: { updateStrategy: { type: strategy }, template: { spec: { containers: [{ name: 'agent', image: 'a:1' }] } } },
  status: { observedGeneration: 7, ...status },
});

describe('daemonSetReady (kubectl rollout status semantics)', () => {
  it.each<[string, DaemonSet, boolean, string]>([
    [
      'generation not observed',
      ds({ observedGeneration: 6, desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2 }),
      false,
      'waiting for the controller to observe the new generation',
    ],
    [
      'pods being updated',
      ds({ desiredNumberScheduled: 3, updatedNumberScheduled: 1, numberAvailable: 3 }),
      false,
      '1 of 3 scheduled pods updated',
    ],
    [
      'updated pods not available',
      ds({ desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 2 }),
      false,
      '2 of 3 updated pods available',
    ],
    [
      'complete',
      ds({ desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3 }),
      true,
      '3 pods updated and available',
    ],
    [
      'no node to run on',
      ds({ desiredNumberScheduled: 0 }),
      true,
      'no node is to run a pod of it (desiredNumberScheduled 0)',
    ],
    [
      'OnDelete',
      ds({ desiredNumberScheduled: 2, updatedNumberScheduled: 0, numberAvailable: 2 }, 'OnDelete'),
      false,
      '0 of 2 scheduled pods run the new revision; updateStrategy OnDelete replaces a pod only once it is deleted',
    ],
  ])('%s', (_, d, ready, message) => {
    expect(daemonSetReady(d)).toEqual({ ready, message });
  });

  it('the cache keeps what the verdict reads', () => {
    const full = {
      ...ds({
        desiredNumberScheduled: 3,
        updatedNumberScheduled: 3,
        numberAvailable: 2,
        numberMisscheduled: 0,
      } as DaemonSet['status']),
      metadata: { name: 'agent', generation: 7, managedFields: [{ manager: 'x' }] },
    } as DaemonSet;
    const slim = daemonSetKind.slim(structuredClone(full) as never);
    expect(daemonSetReady(slim as DaemonSet)).toEqual(daemonSetReady(full));
    expect(JSON.stringify(slim)).not.toContain('managedFields');
  });
});
