import { deployment, dg } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { rolloutVerdict } from '../src/rollout/rolloutVerdict.js';

const startedAt = new Date('2026-12-02T10:00:00Z');
const at = (s: number) => new Date(startedAt.getTime() + s * 1000);
const desired = { tag: 'v1-x', digest: dg('a') };
const img = `reg/shop/cart:v1-x@${dg('a')}`;

describe('rolloutVerdict', () => {
  const base = { workloadName: 'cart', desired, startedAt, timeoutSeconds: 60 };
  it('is Ready when the desired digest runs and all replicas are updated and available', () => {
    expect(rolloutVerdict({ ...base, workload: deployment('cart', img), now: at(5) }).state).toBe('Ready');
  });
  it('waits while the old image is still in the template (e.g. git delivery not synced yet)', () => {
    const v = rolloutVerdict({ ...base, workload: deployment('cart', `reg/shop/cart:v0@${dg('b')}`), now: at(5) });
    expect(v).toMatchObject({ state: 'Progressing', reason: 'AwaitingImage' });
  });
  it('is Progressing while replicas roll and Failed with RolloutTimeout after the timeout', () => {
    expect(rolloutVerdict({ ...base, workload: deployment('cart', img, false), now: at(5) }).state).toBe('Progressing');
    const v = rolloutVerdict({ ...base, workload: deployment('cart', img, false), now: at(60) });
    expect(v).toMatchObject({ state: 'Failed', reason: 'RolloutTimeout' });
    expect(v.message).toMatch(/not ready after 60s/);
  });
  it('fails on ProgressDeadlineExceeded', () => {
    const w = deployment('cart', img, false, {
      conditions: [
        {
          type: 'Progressing',
          status: 'False',
          reason: 'ProgressDeadlineExceeded',
          message: 'ReplicaSet "x" has timed out progressing.',
        },
      ],
    });
    expect(rolloutVerdict({ ...base, workload: w, now: at(5) })).toMatchObject({
      state: 'Failed',
      reason: 'ProgressDeadlineExceeded',
    });
  });
  it('fails on crash signals from pods', () => {
    const pods = [
      {
        metadata: { name: 'cart-1' },
        status: { containerStatuses: [{ name: 'main', state: { waiting: { reason: 'CrashLoopBackOff' } } }] },
      },
    ];
    expect(rolloutVerdict({ ...base, workload: deployment('cart', img, false), now: at(5), pods })).toMatchObject({
      state: 'Failed',
      reason: 'CrashLoopBackOff',
    });
    const restarts = [
      { metadata: { name: 'cart-2' }, status: { containerStatuses: [{ name: 'main', restartCount: 4 }] } },
    ];
    expect(
      rolloutVerdict({ ...base, workload: deployment('cart', img, false), now: at(5), pods: restarts }).reason,
    ).toBe('CrashLooping');
  });
  it('waits for a missing workload, then times out', () => {
    expect(rolloutVerdict({ ...base, workload: undefined, now: at(1) }).state).toBe('Progressing');
    expect(rolloutVerdict({ ...base, workload: undefined, now: at(61) }).state).toBe('Failed');
  });
  it('fails immediately when the named container does not exist', () => {
    expect(
      rolloutVerdict({ ...base, container: 'sidecar', workload: deployment('cart', img), now: at(1) }).reason,
    ).toBe('ContainerNotFound');
  });
  it('does not count a stale observedGeneration as ready', () => {
    const w = deployment('cart', img);
    w.metadata.generation = 3;
    expect(rolloutVerdict({ ...base, workload: w, now: at(1) }).state).toBe('Progressing');
  });
});
