import type { Environment } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { judgeControllerView, judgeDeliveryRights } from '../../src/doctor/controllerView.js';

const env = (generation: number, ready?: Record<string, unknown>) =>
  ({
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'Environment',
    metadata: { name: 'prod', namespace: 'shop', generation },
    spec: { cluster: { context: 'prod-eu-1' }, namespace: 'web', registry: { host: 'r.example.com' } },
    ...(ready
      ? { status: { conditions: [{ type: 'Ready', lastTransitionTime: '2026-12-05T00:00:00Z', ...ready }] } }
      : {}),
  }) as Environment;

describe("doctor: the controller's view of an Environment", () => {
  it('passes a Ready condition of the current generation', () => {
    expect(
      judgeControllerView(env(2, { status: 'True', reason: 'Synced', message: 'watching', observedGeneration: 2 })),
    ).toMatchObject({ status: 'pass', message: 'the controller watches namespace web of cluster prod-eu-1: watching' });
  });

  it('warns when the controller has not reported on the current generation, or is still listing', () => {
    expect(judgeControllerView(env(1))).toMatchObject({
      status: 'warn',
      message: 'the controller has not reported on this Environment',
    });
    expect(judgeControllerView(env(3, { status: 'True', observedGeneration: 2 }))).toMatchObject({
      status: 'warn',
      message: 'the controller has not reported on this Environment since it changed (generation 3, reported 2)',
    });
    expect(judgeControllerView(env(1, { status: 'Unknown', reason: 'Syncing', observedGeneration: 1 }))).toMatchObject({
      status: 'warn',
      message: 'the controller is still listing workloads in namespace web of cluster prod-eu-1',
    });
  });

  it('fails a refusal by clusterAccess, a forbidden watch and an unreachable cluster, each with its own fix', () => {
    const refused = judgeControllerView(
      env(1, {
        status: 'False',
        reason: 'ClusterNotAllowed',
        message: 'context prod-eu-1 is not allowed',
        observedGeneration: 1,
      }),
    );
    expect(refused).toMatchObject({ status: 'fail', fix: expect.stringContaining('clusterAccess rule') });
    const forbidden = judgeControllerView(
      env(1, {
        status: 'False',
        reason: 'WatchFailed',
        message: 'GET /apis/apps/v1/namespaces/web/deployments failed (403 Forbidden): deployments.apps is forbidden',
        observedGeneration: 1,
      }),
    );
    expect(forbidden).toMatchObject({
      status: 'fail',
      message: expect.stringMatching(/^the controller may not watch namespace web of cluster prod-eu-1: /),
      fix: expect.stringContaining('get, list and watch on the workload kinds'),
    });
    const down = judgeControllerView(
      env(1, { status: 'False', reason: 'ClusterUnreachable', message: 'connect ECONNREFUSED', observedGeneration: 1 }),
    );
    expect(down).toMatchObject({
      status: 'fail',
      message: 'the controller cannot reach namespace web of cluster prod-eu-1: connect ECONNREFUSED',
      fix: expect.stringContaining("the controller's kubeconfig"),
    });
  });

  it("fails an Environment whose DeliveryPermitted condition is False (the controller's own rights there)", () => {
    const e = env(1, { status: 'True', observedGeneration: 1 });
    expect(judgeDeliveryRights(e)).toEqual([]);
    e.status!.conditions!.push({
      type: 'DeliveryPermitted',
      status: 'False',
      reason: 'Forbidden',
      message: "the controller's identity in this cluster may not patch deployments.apps in namespace web",
      lastTransitionTime: '2026-12-05T00:00:00Z',
    });
    expect(judgeDeliveryRights(e)).toEqual([
      expect.objectContaining({
        status: 'fail',
        message: "the controller's identity in this cluster may not patch deployments.apps in namespace web",
        fix: expect.stringContaining('grant those verbs, in namespace web of that cluster'),
      }),
    ]);
  });
});
