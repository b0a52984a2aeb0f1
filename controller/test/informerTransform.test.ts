import { app, dg, env } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { runningVersion } from '../src/candidates/runningVersion.js';
import type { HelmRelease, Workload } from '../src/kube/cacheView.js';
import { type KObject, slimHelmRelease, slimWorkload, withoutManagedFields } from '../src/kube/informer.js';
import { MemoryCache } from '../src/kube/memoryCache.js';
import { containerOf, rolloutVerdict, workloadReady } from '../src/rollout/rolloutVerdict.js';

const managedFields = [
  {
    manager: 'kubectl',
    operation: 'Apply',
    apiVersion: 'apps/v1',
    time: '2026-01-01T00:00:00Z',
    fieldsType: 'FieldsV1',
    fieldsV1: { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"main"}': {} } } } } },
  },
  { manager: 'kube-controller-manager', operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': {} } },
];

/** A Deployment as the apiserver sends it: managedFields, a full pod template, a rich status. */
function fullDeployment(o: { image: string; ready: boolean; deadline?: boolean }) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'web',
      namespace: 'shop',
      uid: '5d4c8a1e-0000-4000-8000-000000000001',
      resourceVersion: '4711',
      generation: 3,
      creationTimestamp: '2026-01-01T00:00:00Z',
      labels: { app: 'web', team: 'a' },
      annotations: {
        'deployment.kubernetes.io/revision': '3',
        'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({ spec: { big: 'x'.repeat(4000) } }),
      },
      managedFields,
    },
    spec: {
      replicas: 2,
      revisionHistoryLimit: 10,
      progressDeadlineSeconds: 600,
      selector: { matchLabels: { app: 'web' } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
      template: {
        metadata: { labels: { app: 'web' }, annotations: { 'prometheus.io/scrape': 'true' } },
        spec: {
          initContainers: [{ name: 'init', image: 'busybox:1' }],
          containers: [
            {
              name: 'main',
              image: o.image,
              args: ['--port=8080'],
              env: [{ name: 'A', value: 'b' }],
              resources: { limits: { cpu: '1', memory: '256Mi' } },
              readinessProbe: { httpGet: { path: '/ready', port: 8080 } },
              ports: [{ containerPort: 8080 }],
            },
            { name: 'sidecar', image: 'envoy:1.30', terminationMessagePath: '/dev/termination-log' },
          ],
          volumes: [{ name: 'cfg', configMap: { name: 'web' } }],
          tolerations: [{ operator: 'Exists' }],
          dnsPolicy: 'ClusterFirst',
        },
      },
    },
    status: {
      observedGeneration: 3,
      replicas: o.ready ? 2 : 3,
      updatedReplicas: o.ready ? 2 : 1,
      readyReplicas: 2,
      availableReplicas: 2,
      ...(o.ready ? {} : { unavailableReplicas: 1 }),
      collisionCount: 0,
      conditions: [
        {
          type: 'Available',
          status: 'True',
          reason: 'MinimumReplicasAvailable',
          message: 'Deployment has minimum availability.',
          lastUpdateTime: '2026-01-01T00:00:00Z',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
        o.deadline
          ? {
              type: 'Progressing',
              status: 'False',
              reason: 'ProgressDeadlineExceeded',
              message: 'ReplicaSet "web-abc" has timed out progressing.',
              lastUpdateTime: '2026-01-01T00:10:00Z',
            }
          : { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable', message: 'progressed' },
      ],
    },
  };
}

const image = `reg.local/shop/web:v1.2.3@${dg('a')}`;

describe('slimWorkload (what the cache keeps of a Deployment/StatefulSet)', () => {
  it('drops managedFields, last-applied, labels and the pod template beyond containers name/image', () => {
    const slim = slimWorkload(fullDeployment({ image, ready: true }) as Workload);
    expect(slim).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'web',
        namespace: 'shop',
        uid: '5d4c8a1e-0000-4000-8000-000000000001',
        resourceVersion: '4711',
        generation: 3,
        annotations: { 'deployment.kubernetes.io/revision': '3' },
      },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        template: {
          spec: {
            containers: [
              { name: 'main', image },
              { name: 'sidecar', image: 'envoy:1.30' },
            ],
          },
        },
      },
      status: {
        observedGeneration: 3,
        replicas: 2,
        updatedReplicas: 2,
        readyReplicas: 2,
        availableReplicas: 2,
        conditions: [
          {
            type: 'Available',
            status: 'True',
            reason: 'MinimumReplicasAvailable',
            message: 'Deployment has minimum availability.',
          },
          { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable', message: 'progressed' },
        ],
      },
    });
    expect(JSON.stringify(slim)).not.toContain('managedFields');
  });

  it('is at most a fraction of the original size', () => {
    const full = fullDeployment({ image, ready: true });
    expect(JSON.stringify(slimWorkload(full as Workload)).length).toBeLessThan(JSON.stringify(full).length / 4);
  });

  it.each([
    ['ready', { image, ready: true }],
    ['rolling out', { image, ready: false }],
    ['past its progress deadline', { image, ready: false, deadline: true }],
  ])('gives the same rollout verdicts and running version as the full object (%s)', (_, o) => {
    const full = fullDeployment(o) as Workload;
    const slim = slimWorkload(structuredClone(full));
    expect(workloadReady(slim)).toEqual(workloadReady(full));
    expect(containerOf(slim)).toEqual({ name: 'main', image });
    expect(containerOf(slim, 'sidecar')).toEqual({ name: 'sidecar', image: 'envoy:1.30' });
    const input = {
      workloadName: 'web',
      desired: { digest: dg('a') },
      startedAt: new Date(0),
      now: new Date(1000),
      timeoutSeconds: 600,
    };
    expect(rolloutVerdict({ ...input, workload: slim })).toEqual(rolloutVerdict({ ...input, workload: full }));
    const version = (w: Workload) => {
      const c = new MemoryCache();
      c.workloads.set('prod/Deployment/web', w);
      return runningVersion(c, app('web'), env('prod'));
    };
    expect(version(slim)).toEqual(version(full));
  });

  it('keeps what StatefulSet verdicts read (revisions, update strategy)', () => {
    const sts = {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db', namespace: 'shop', generation: 5, managedFields },
      spec: {
        replicas: 3,
        serviceName: 'db',
        selector: { matchLabels: { app: 'db' } },
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
        template: { spec: { containers: [{ name: 'db', image: 'postgres:16', env: [{ name: 'X', value: 'y' }] }] } },
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: '1Gi' } } } }],
      },
      status: {
        observedGeneration: 5,
        replicas: 3,
        updatedReplicas: 3,
        readyReplicas: 2,
        currentRevision: 'db-1',
        updateRevision: 'db-2',
        collisionCount: 0,
      },
    } as unknown as Workload;
    const slim = slimWorkload(structuredClone(sts));
    expect(slim.spec).toEqual({
      replicas: 3,
      selector: { matchLabels: { app: 'db' } },
      updateStrategy: { type: 'RollingUpdate' },
      template: { spec: { containers: [{ name: 'db', image: 'postgres:16' }] } },
    });
    expect(slim.status).toEqual({
      observedGeneration: 5,
      replicas: 3,
      updatedReplicas: 3,
      readyReplicas: 2,
      currentRevision: 'db-1',
      updateRevision: 'db-2',
    });
    expect(workloadReady(slim)).toEqual(workloadReady(sts));
    expect(workloadReady(slim).ready).toBe(false);
  });

  it('copes with objects that have no spec or status yet', () => {
    expect(slimWorkload({ kind: 'Deployment', metadata: { name: 'x' } })).toEqual({
      kind: 'Deployment',
      metadata: { name: 'x' },
    });
  });
});

describe('slimHelmRelease', () => {
  it('keeps spec (values are read) and conditions, drops managedFields and status history', () => {
    const hr = {
      apiVersion: 'helm.toolkit.fluxcd.io/v2',
      kind: 'HelmRelease',
      metadata: { name: 'web', namespace: 'shop', generation: 2, resourceVersion: '9', managedFields },
      spec: { chart: { spec: { chart: 'web' } }, values: { image: { repository: 'reg/web', tag: 'v1' } } },
      status: {
        observedGeneration: 2,
        conditions: [{ type: 'Ready', status: 'True', reason: 'Succeeded', message: 'ok', lastTransitionTime: 't' }],
        history: [{ chartVersion: '1.0.0', digest: 'sha256:x', status: 'deployed' }],
        lastAttemptedRevision: '1.0.0',
      },
    } as unknown as HelmRelease;
    expect(slimHelmRelease(hr)).toEqual({
      apiVersion: 'helm.toolkit.fluxcd.io/v2',
      kind: 'HelmRelease',
      metadata: { name: 'web', namespace: 'shop', generation: 2, resourceVersion: '9' },
      spec: hr.spec,
      status: {
        observedGeneration: 2,
        conditions: [{ type: 'Ready', status: 'True', reason: 'Succeeded', message: 'ok' }],
      },
    });
  });
});

describe('withoutManagedFields (kpromo objects)', () => {
  it('drops only metadata.managedFields and leaves the input alone', () => {
    const plan = {
      apiVersion: 'promotions.kpromo.dev/v1alpha1',
      kind: 'PromotionPlan',
      metadata: { name: 'p', namespace: 'ns', resourceVersion: '1', annotations: { a: 'b' }, managedFields },
      spec: { from: 'dev', to: 'prod' },
      status: { phase: 'Promoting' },
    };
    const out = withoutManagedFields(plan as KObject) as typeof plan;
    expect(out.metadata).toEqual({ name: 'p', namespace: 'ns', resourceVersion: '1', annotations: { a: 'b' } });
    expect(out.spec).toBe(plan.spec);
    expect(out.status).toBe(plan.status);
    expect(plan.metadata.managedFields).toBe(managedFields);
  });

  it('returns objects without managedFields as they are', () => {
    const o = { metadata: { name: 'x' } };
    expect(withoutManagedFields(o)).toBe(o);
  });
});
