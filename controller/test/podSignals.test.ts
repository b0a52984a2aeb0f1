import { describe, expect, it } from 'vitest';
import { PodSignalReads } from '../src/rollout/podSignals.js';
import type { PodSignal } from '../src/rollout/rolloutVerdict.js';

const crashing: PodSignal[] = [
  {
    metadata: { name: 'web-1' },
    status: { containerStatuses: [{ name: 'main', state: { waiting: { reason: 'CrashLoopBackOff' } } }] },
  } as PodSignal,
];

describe('pod reads for crash signals during a rollout', () => {
  it('lists no pods for a young rollout, then at most once per interval per workload', async () => {
    let now = 100_000;
    const reads = new PodSignalReads({ minAgeMs: 15_000, intervalMs: 10_000, now: () => now });
    let lists = 0;
    const list = async () => {
      lists++;
      return crashing;
    };
    const started = new Date(now);
    expect(await reads.read('dev/web', started, list)).toBeUndefined();
    now += 15_000;
    expect(await reads.read('dev/web', started, list)).toEqual(crashing);
    now += 9_999;
    expect(await reads.read('dev/web', started, list)).toEqual(crashing); // the last listing
    expect(await reads.read('dev/api', started, list)).toEqual(crashing); // another workload lists its own
    expect(lists).toBe(2);
    now += 1;
    await reads.read('dev/web', started, list);
    expect(lists).toBe(3);
  });

  it('forgets the oldest workloads beyond its bound and lets a failed listing fail the check', async () => {
    const reads = new PodSignalReads({ minAgeMs: 0, maxEntries: 2 });
    const old = new Date(0);
    for (const k of ['a', 'b', 'c']) await reads.read(k, old, async () => []);
    expect(reads.size).toBe(2);
    await expect(
      reads.read('d', old, async () => {
        throw new Error('apiserver down');
      }),
    ).rejects.toThrow('apiserver down');
    expect(reads.size).toBe(2);
  });
});
