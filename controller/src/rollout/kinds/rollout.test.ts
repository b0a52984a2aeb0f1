import { describe, expect, it } from 'vitest';
import type { Workload } from '../../kube/cacheView.js';
import { rolloutVerdict } from '../rolloutVerdict.js';
import { type Rollout, rolloutKind, rolloutReady } from './rollout.js';

const D = `sha256:${'a'.repeat(64)}`;
const IMG = `reg/shop/cart:v2@${D}`;
const T0 = '2026-12-02T10:00:00Z';

/** A canary Rollout (setWeight 50, pause) as Argo Rollouts writes its status. */
function canary(
  status: Partial<NonNullable<Rollout['status']>>,
  spec: Partial<NonNullable<Rollout['spec']>> = {},
): Rollout {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name: 'cart', generation: 3 },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'cart' } },
      template: { spec: { containers: [{ name: 'main', image: IMG }] } },
      strategy: { canary: { steps: [{ setWeight: 50 }, { pause: {} }] } },
      ...spec,
    },
    status: {
      observedGeneration: '3',
      replicas: 2,
      updatedReplicas: 2,
      availableReplicas: 2,
      currentPodHash: 'new',
      stableRS: 'new',
      currentStepIndex: 2,
      ...status,
    },
  };
}
const cond = (type: string, status: string, reason: string, message = '', lastTransitionTime = T0) => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime,
});

describe("rolloutReady (Argo CD's health rules for argoproj.io/Rollout)", () => {
  it('waits until Argo Rollouts observed the generation (status.observedGeneration is a string)', () => {
    expect(rolloutReady({ ...canary({}), status: undefined })).toEqual({
      ready: false,
      message: 'waiting for Argo Rollouts to observe the Rollout',
    });
    expect(rolloutReady(canary({ observedGeneration: '2' }))).toEqual({
      ready: false,
      message: 'waiting for Argo Rollouts to observe the new generation',
    });
  });

  it('a pause step is Paused (waiting, not failed), naming the step', () => {
    const r = canary({
      currentStepIndex: 1,
      stableRS: 'old',
      updatedReplicas: 1,
      pauseConditions: [{ reason: 'CanaryPauseStep', startTime: T0 }],
      conditions: [cond('Paused', 'True', 'RolloutPaused', 'Rollout is paused')],
    });
    expect(rolloutReady(r)).toEqual({
      ready: false,
      paused: true,
      message:
        'Rollout is paused (CanaryPauseStep at step 2 of 2); promote it to continue (kubectl argo rollouts promote cart)',
    });
    expect(rolloutReady(canary({ stableRS: 'old' }, { paused: true }))).toMatchObject({ paused: true });
  });

  it.each<[string, Partial<NonNullable<Rollout['status']>>, string, string]>([
    [
      'aborted',
      {
        abort: true,
        stableRS: 'old',
        conditions: [cond('Progressing', 'False', 'RolloutAborted', 'Rollout aborted update to revision 2')],
      },
      'RolloutAborted',
      'Rollout aborted update to revision 2',
    ],
    [
      'aborted, before the condition is written',
      { abort: true, stableRS: 'old', message: 'RolloutAborted: Rollout aborted update to revision 2' },
      'RolloutAborted',
      'RolloutAborted: Rollout aborted update to revision 2',
    ],
    [
      'past its progress deadline',
      {
        conditions: [
          cond('Progressing', 'False', 'ProgressDeadlineExceeded', 'ReplicaSet "cart-new" has timed out progressing.'),
        ],
      },
      'ProgressDeadlineExceeded',
      'ReplicaSet "cart-new" has timed out progressing.',
    ],
    [
      'with an invalid spec',
      {
        conditions: [
          cond('InvalidSpec', 'True', 'InvalidSpec', 'The Rollout "cart" is invalid: spec.strategy: Required value'),
        ],
      },
      'InvalidSpec',
      'The Rollout "cart" is invalid: spec.strategy: Required value',
    ],
  ])('Failed when %s', (_, status, failed, message) => {
    expect(rolloutReady(canary(status))).toEqual({ ready: false, failed, message });
  });

  it.each<[string, Partial<NonNullable<Rollout['status']>>, string]>([
    ['status not reconciled', { currentPodHash: undefined }, 'waiting for Argo Rollouts to reconcile the status'],
    ['replicas being updated', { updatedReplicas: 1, stableRS: 'old' }, '1 of 2 replicas updated'],
    ['updated replicas not available', { availableReplicas: 1 }, '1 of 2 updated replicas available'],
    ['old replicas left', { replicas: 3 }, '1 old replicas pending termination'],
    [
      'steps left',
      { stableRS: 'old', currentStepIndex: 1 },
      'waiting for the canary to finish its steps at step 2 of 2',
    ],
  ])('waits while %s', (_, status, message) => {
    expect(rolloutReady(canary(status))).toEqual({ ready: false, message });
  });

  it('is Healthy when the stable revision is the current one', () => {
    expect(rolloutReady(canary({}))).toEqual({
      ready: true,
      message: 'stable revision new is the current one; 2 replicas updated and available',
    });
  });

  it('blue-green: waits for the active service cutover', () => {
    const bg = (activeSelector: string) =>
      canary({ blueGreen: { activeSelector } }, { strategy: { blueGreen: { activeService: 'cart' } } });
    expect(rolloutReady(bg('old'))).toEqual({ ready: false, message: 'active service cutover pending' });
    expect(rolloutReady(bg('new')).ready).toBe(true);
  });

  it('the rollout timeout does not run while paused and counts again from the promotion', () => {
    const base = {
      workloadName: 'cart',
      desired: { digest: D },
      startedAt: new Date(T0),
      timeoutSeconds: 60,
      kind: rolloutKind,
    };
    const paused = canary({
      stableRS: 'old',
      pauseConditions: [{ reason: 'CanaryPauseStep', startTime: T0 }],
    }) as unknown as Workload;
    expect(rolloutVerdict({ ...base, workload: paused, now: new Date('2026-12-02T11:00:00Z') })).toMatchObject({
      state: 'Progressing',
      reason: 'Paused',
      message: expect.stringMatching(/^Paused: cart: Rollout is paused \(CanaryPauseStep/),
    });
    // Promoted at 10:59:50: the last steps get the full minute from there.
    const resumed = canary({
      stableRS: 'old',
      conditions: [cond('Paused', 'False', 'RolloutResumed', 'Rollout is resumed', '2026-12-02T10:59:50Z')],
    }) as unknown as Workload;
    expect(rolloutVerdict({ ...base, workload: resumed, now: new Date('2026-12-02T11:00:00Z') })).toMatchObject({
      state: 'Progressing',
      reason: 'RollingOut',
    });
    expect(rolloutVerdict({ ...base, workload: resumed, now: new Date('2026-12-02T11:00:51Z') })).toMatchObject({
      state: 'Failed',
      reason: 'RolloutTimeout',
    });
  });

  it('the cache keeps what the verdict reads', () => {
    const full = canary({
      stableRS: 'old',
      currentStepIndex: 1,
      pauseConditions: [{ reason: 'CanaryPauseStep', startTime: T0 }],
      conditions: [cond('Paused', 'True', 'RolloutPaused'), cond('Progressing', 'True', 'RolloutPaused')],
    });
    const slim = rolloutKind.slim(structuredClone(full) as unknown as Workload) as unknown as Rollout;
    expect(rolloutReady(slim)).toEqual(rolloutReady(full));
    expect(slim.spec?.strategy).toEqual({ canary: { steps: [{}, {}] } });
  });
});
