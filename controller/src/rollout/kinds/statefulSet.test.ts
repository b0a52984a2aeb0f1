import { describe, expect, it } from 'vitest';
import type { Workload } from '../../kube/cacheView.js';
import { statefulSetReady } from './statefulSet.js';

const sts = (
  updateStrategy: NonNullable<Workload['spec']>['updateStrategy'],
  status: Workload['status'],
): Workload => ({
  kind: 'StatefulSet',
  metadata: { name: 'db', generation: 4 },
  spec: { replicas: 3, updateStrategy },
  status: { observedGeneration: 4, ...status },
});
const rolling = { type: 'RollingUpdate' };

describe('statefulSetReady (kubectl rollout status / Argo CD semantics, by update strategy)', () => {
  it('waits for the generation to be observed', () => {
    const w = sts(rolling, { observedGeneration: 3, updatedReplicas: 3, readyReplicas: 3 });
    expect(statefulSetReady(w)).toEqual({
      ready: false,
      message: 'waiting for the controller to observe the new generation',
    });
  });

  it.each<[string, Workload['status'], boolean, string]>([
    [
      'pods being updated',
      { updatedReplicas: 1, readyReplicas: 3, currentRevision: 'db-1', updateRevision: 'db-2' },
      false,
      '1 of 3 replicas updated',
    ],
    [
      'updated pods not ready',
      { updatedReplicas: 3, readyReplicas: 2, currentRevision: 'db-1', updateRevision: 'db-2' },
      false,
      '2 of 3 replicas ready',
    ],
    [
      'current revision behind',
      { updatedReplicas: 3, readyReplicas: 3, currentRevision: 'db-1', updateRevision: 'db-2' },
      false,
      'waiting for the rolling update to complete (revision db-2)',
    ],
    [
      'complete',
      { updatedReplicas: 3, readyReplicas: 3, currentRevision: 'db-2', updateRevision: 'db-2' },
      true,
      '3 replicas ready',
    ],
  ])('RollingUpdate: %s', (_, status, ready, message) => {
    expect(statefulSetReady(sts(rolling, status))).toEqual({ ready, message });
  });

  it('RollingUpdate with a partition is complete once the pods above it are updated and all are ready', () => {
    const partitioned = { type: 'RollingUpdate', rollingUpdate: { partition: 2 } };
    expect(statefulSetReady(sts(partitioned, { updatedReplicas: 0, readyReplicas: 3 }))).toEqual({
      ready: false,
      message: 'partitioned roll out: 0 of 1 pods updated (partition 2)',
    });
    expect(
      statefulSetReady(
        sts(partitioned, { updatedReplicas: 1, readyReplicas: 3, currentRevision: 'db-1', updateRevision: 'db-2' }),
      ),
    ).toEqual({
      ready: true,
      message: 'partitioned roll out complete: 1 of 3 pods updated (partition 2 keeps the rest at the old revision)',
    });
  });

  it('OnDelete waits, saying why, until every pod was replaced', () => {
    const onDelete = { type: 'OnDelete' };
    expect(statefulSetReady(sts(onDelete, { updatedReplicas: 1, readyReplicas: 3 }))).toEqual({
      ready: false,
      message: '1 of 3 pods run the new revision; updateStrategy OnDelete replaces a pod only once it is deleted',
    });
    expect(
      statefulSetReady(
        sts(onDelete, { updatedReplicas: 3, readyReplicas: 3, currentRevision: 'db-2', updateRevision: 'db-2' }),
      ).ready,
    ).toBe(true);
  });
});
