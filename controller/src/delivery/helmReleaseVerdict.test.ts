import { describe, expect, it } from 'vitest';
import { type HelmReleaseObject, helmReleaseVerdict, type WrittenValue } from './helmReleaseVerdict.js';

// Statuses shaped as helm-controller (api/v2, docs/spec/v2/helmreleases.md) writes them.
const TAG = 'v2.0.0';
const WRITTEN: WrittenValue[] = [{ path: ['image', 'tag'], value: TAG, field: 'delivery.helmRelease.valuesPath' }];
const REF = 'shop/web';
type Cond = NonNullable<NonNullable<HelmReleaseObject['status']>['conditions']>[number];
const cond = (type: string, status: string, reason: string, message = '', observedGeneration = 4): Cond => ({
  type,
  status,
  reason,
  message,
  observedGeneration,
});
const deployed = { chartName: 'web', chartVersion: '1.2.3', appVersion: '2.0.0', version: 5, status: 'deployed' };

const hr = (status: HelmReleaseObject['status'], extra: Partial<HelmReleaseObject> = {}): HelmReleaseObject => ({
  metadata: { name: 'web', namespace: 'shop', generation: 4 },
  spec: { values: { image: { tag: TAG } } },
  status,
  ...extra,
});

describe('helmReleaseVerdict', () => {
  it('applied when Ready=True for this generation and the newest release is deployed', () => {
    const v = helmReleaseVerdict(
      hr({
        observedGeneration: 4,
        lastAttemptedGeneration: 4,
        lastAttemptedRevision: '1.2.3',
        conditions: [
          cond('Ready', 'True', 'UpgradeSucceeded', 'Helm upgrade succeeded'),
          cond('Released', 'True', 'UpgradeSucceeded'),
        ],
        history: [
          { ...deployed, action: 'upgrade' },
          { ...deployed, version: 4, status: 'superseded' },
        ],
      }),
      REF,
      WRITTEN,
    );
    expect(v).toEqual({
      state: 'Applied',
      message: 'HelmRelease shop/web generation 4 released: web@1.2.3 (app 2.0.0), Helm revision 5 deployed by upgrade',
    });
  });

  it('progressing while Ready was set for an older generation (kpromo’s patch not reconciled yet)', () => {
    const v = helmReleaseVerdict(
      hr({
        observedGeneration: 3,
        conditions: [cond('Ready', 'True', 'UpgradeSucceeded', '', 3)],
        history: [deployed],
      }),
      REF,
      WRITTEN,
    );
    expect(v).toEqual({
      state: 'Progressing',
      message:
        'waiting for helm-controller to reconcile HelmRelease shop/web generation 4 (Ready last set for generation 3)',
    });
  });

  it('progressing with no status yet, and when the HelmRelease is missing', () => {
    expect(helmReleaseVerdict(hr(undefined), REF, WRITTEN)).toMatchObject({
      state: 'Progressing',
      message: expect.stringContaining('Ready not reported yet'),
    });
    expect(helmReleaseVerdict(undefined, REF, WRITTEN)).toEqual({
      state: 'Progressing',
      message: 'waiting for HelmRelease shop/web (not found)',
    });
  });

  it('progressing while helm-controller runs the upgrade (Ready=Unknown, Reconciling=True)', () => {
    const v = helmReleaseVerdict(
      hr({
        conditions: [
          cond('Reconciling', 'True', 'Progressing', "Running 'upgrade' action with timeout of 5m0s"),
          cond('Ready', 'Unknown', 'Progressing', "Running 'upgrade' action with timeout of 5m0s"),
        ],
        history: [{ ...deployed, version: 4 }],
      }),
      REF,
      WRITTEN,
    );
    expect(v.state).toBe('Progressing');
    expect(v.message).toBe(
      "HelmRelease shop/web generation 4 not ready yet (reconciling): Running 'upgrade' action with timeout of 5m0s",
    );
  });

  it.each(['InstallFailed', 'UpgradeFailed', 'TestFailed', 'RollbackSucceeded', 'ArtifactFailed'])(
    'fails with Ready=False reason %s for this generation when helm-controller is not retrying',
    (reason) => {
      const v = helmReleaseVerdict(
        hr({ conditions: [cond('Ready', 'False', reason, 'Helm upgrade failed: boom')], history: [deployed] }),
        REF,
        WRITTEN,
      );
      expect(v).toEqual({
        state: 'Failed',
        reason,
        message: `HelmRelease shop/web generation 4 ${reason}: Helm upgrade failed: boom`,
      });
    },
  );

  it('progressing while helm-controller retries after a failure (Reconciling reason ProgressingWithRetry)', () => {
    const v = helmReleaseVerdict(
      hr({
        conditions: [
          cond('Reconciling', 'True', 'ProgressingWithRetry', 'retrying after 1m0s'),
          cond('Ready', 'False', 'UpgradeFailed', 'Helm upgrade failed: timed out'),
        ],
      }),
      REF,
      WRITTEN,
    );
    expect(v).toEqual({
      state: 'Progressing',
      message:
        'helm-controller retries HelmRelease shop/web generation 4 after UpgradeFailed: Helm upgrade failed: timed out',
    });
  });

  it('fails when stalled (retries exhausted), with the Ready reason and both messages', () => {
    const v = helmReleaseVerdict(
      hr({
        observedGeneration: 4,
        conditions: [
          cond('Stalled', 'True', 'RetriesExceeded', 'Failed to upgrade after 1 attempt(s)'),
          cond('Ready', 'False', 'UpgradeFailed', 'Helm upgrade failed for release shop/web: image pull'),
          cond('Released', 'False', 'UpgradeFailed', 'Helm upgrade failed for release shop/web: image pull'),
        ],
      }),
      REF,
      WRITTEN,
    );
    expect(v).toEqual({
      state: 'Failed',
      reason: 'UpgradeFailed',
      message:
        'HelmRelease shop/web generation 4 stalled (RetriesExceeded: Failed to upgrade after 1 attempt(s)): UpgradeFailed: Helm upgrade failed for release shop/web: image pull',
    });
    // Stalled alone (e.g. an invalid health check expression): its own reason.
    const alone = helmReleaseVerdict(
      hr({ conditions: [cond('Stalled', 'True', 'InvalidCELExpression', 'bad expr')] }),
      REF,
      WRITTEN,
    );
    expect(alone).toMatchObject({ state: 'Failed', reason: 'InvalidCELExpression' });
  });

  it('a Stalled or failed condition of an older generation does not fail kpromo’s newer values', () => {
    const v = helmReleaseVerdict(
      hr({
        conditions: [
          cond('Stalled', 'True', 'RetriesExceeded', 'Failed to upgrade after 1 attempt(s)', 3),
          cond('Ready', 'False', 'UpgradeFailed', 'old failure', 3),
        ],
      }),
      REF,
      WRITTEN,
    );
    expect(v.state).toBe('Progressing');
  });

  it('waits (not fails) for transient Ready=False reasons: a dependency or the chart source not ready', () => {
    for (const reason of ['DependencyNotReady', 'SourceNotReady', 'ReconcileError']) {
      const v = helmReleaseVerdict(hr({ conditions: [cond('Ready', 'False', reason, 'wait')] }), REF, WRITTEN);
      expect(v, reason).toEqual({
        state: 'Progressing',
        message: `HelmRelease shop/web generation 4 not ready yet (${reason}): wait`,
      });
    }
  });

  it('Ready=True but the newest release is not deployed, or of another chart version: progressing', () => {
    const failedLatest = helmReleaseVerdict(
      hr({ conditions: [cond('Ready', 'True', 'UpgradeSucceeded')], history: [{ ...deployed, status: 'failed' }] }),
      REF,
      WRITTEN,
    );
    expect(failedLatest).toMatchObject({ state: 'Progressing', message: expect.stringContaining('is failed') });
    const otherChart = helmReleaseVerdict(
      hr({
        lastAttemptedRevision: '1.3.0',
        conditions: [cond('Ready', 'True', 'UpgradeSucceeded')],
        history: [deployed],
      }),
      REF,
      WRITTEN,
    );
    expect(otherChart).toMatchObject({
      state: 'Progressing',
      message: expect.stringContaining('chart 1.2.3, not the last attempted 1.3.0'),
    });
    const noHistory = helmReleaseVerdict(hr({ conditions: [cond('Ready', 'True', 'InstallSucceeded')] }), REF, WRITTEN);
    expect(noHistory).toMatchObject({ state: 'Progressing', message: expect.stringContaining('no release yet') });
  });

  it('fails when spec.values no longer carry what kpromo wrote (another writer replaced them)', () => {
    const v = helmReleaseVerdict(
      hr(
        { conditions: [cond('Ready', 'True', 'UpgradeSucceeded')], history: [deployed] },
        { spec: { values: { image: { tag: 'v1.0.0' } } } },
      ),
      REF,
      [...WRITTEN, { path: ['image', 'digest'], value: 'sha256:abc', field: 'delivery.helmRelease.digestPath' }],
    );
    expect(v).toMatchObject({ state: 'Failed', reason: 'HelmReleaseValuesChanged' });
    expect(v.message).toContain('spec.values.image.tag (delivery.helmRelease.valuesPath) is "v1.0.0", not "v2.0.0"');
  });

  it('reads values through own properties only: an inherited key never matches', () => {
    const v = helmReleaseVerdict(
      hr({ conditions: [cond('Ready', 'True', 'UpgradeSucceeded')], history: [deployed] }, { spec: { values: {} } }),
      REF,
      [{ path: ['constructor', 'name'], value: 'Object', field: 'delivery.helmRelease.valuesPath' }],
    );
    expect(v).toMatchObject({ state: 'Failed', reason: 'HelmReleaseValuesChanged' });
    expect(v.message).toContain('is unset');
  });

  it('suspended: progressing, saying so', () => {
    const v = helmReleaseVerdict(
      hr(
        { conditions: [cond('Ready', 'True', 'UpgradeSucceeded', '', 3)] },
        {
          spec: { suspend: true, values: { image: { tag: TAG } } },
        },
      ),
      REF,
      WRITTEN,
    );
    expect(v).toEqual({
      state: 'Progressing',
      message: 'HelmRelease shop/web is suspended; helm-controller does not release it',
    });
  });
});
