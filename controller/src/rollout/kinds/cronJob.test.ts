import { describe, expect, it } from 'vitest';
import { containerOf, rolloutVerdict } from '../rolloutVerdict.js';
import { type CronJob, cronJobKind, cronJobReady, nextRunReadiness } from './cronJob.js';
import type { Job } from './job.js';

const D = `sha256:${'a'.repeat(64)}`;
const OLD = `sha256:${'b'.repeat(64)}`;
const img = (d: string) => `reg/shop/report:v2@${d}`;
const cj = (image: string, extra: Partial<NonNullable<CronJob['spec']>> = {}): CronJob => ({
  kind: 'CronJob',
  metadata: { name: 'report', uid: 'cj-uid' },
  spec: {
    schedule: '*/5 * * * *',
    jobTemplate: { spec: { template: { spec: { containers: [{ name: 'main', image }] } } } },
    ...extra,
  },
  status: { lastScheduleTime: '2026-12-02T10:00:00Z' },
});
const run = (name: string, image: string, created: string, conditions: Job['status'] = {}): Job => ({
  kind: 'Job',
  metadata: { name, creationTimestamp: created, ownerReferences: [{ kind: 'CronJob', name: 'report', uid: 'cj-uid' }] },
  spec: { template: { spec: { containers: [{ name: 'main', image }] } } },
  status: conditions,
});
const done = { succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] };
const failed = {
  failed: 1,
  conditions: [
    {
      type: 'Failed',
      status: 'True',
      reason: 'BackoffLimitExceeded',
      message: 'Job has reached the specified backoff limit',
    },
  ],
};

describe('CronJob', () => {
  it('keeps its image in the job template', () => {
    expect(containerOf(cj(img(D)) as never)).toEqual({ name: 'main', image: img(D) });
    const v = rolloutVerdict({
      workload: cj(img(OLD)) as never,
      workloadName: 'report',
      desired: { digest: D },
      startedAt: new Date(0),
      now: new Date(1000),
      timeoutSeconds: 60,
      kind: cronJobKind,
    });
    expect(v).toMatchObject({ state: 'Progressing', reason: 'AwaitingImage' });
  });

  it('is rolled out once the job template runs the promoted image', () => {
    expect(cronJobReady(cj(img(D)))).toEqual({
      ready: true,
      message: 'job template updated; its next Job runs it (schedule "*/5 * * * *")',
    });
    expect(cronJobReady(cj(img(D), { suspend: true })).message).toBe(
      'job template updated; the CronJob is suspended, so no Job runs it yet (schedule "*/5 * * * *")',
    );
  });

  describe('nextRunReadiness (waitForNextRun)', () => {
    it('waits for a run with the promoted image (older runs do not count)', () => {
      const jobs = [run('report-1', img(OLD), '2026-12-02T10:00:00Z', done)];
      expect(nextRunReadiness(cj(img(D)), jobs, { digest: D })).toEqual({
        ready: false,
        message:
          'waiting for the next scheduled run with the promoted image (schedule "*/5 * * * *"; last scheduled at 2026-12-02T10:00:00Z)',
      });
    });
    it('judges the newest run with the promoted image', () => {
      const jobs = [
        run('report-2', img(D), '2026-12-02T10:05:00Z', failed),
        run('report-3', img(D), '2026-12-02T10:10:00Z', { active: 1 }),
      ];
      expect(nextRunReadiness(cj(img(D)), jobs, { digest: D })).toMatchObject({
        ready: false,
        message: 'run report-3: Job running: 1 active, 0 succeeded, 0 failed',
      });
      jobs[1].status = done;
      expect(nextRunReadiness(cj(img(D)), jobs, { digest: D })).toEqual({
        ready: true,
        message: 'run report-3: Job completed (1 succeeded)',
      });
    });
    it('fails when that run fails', () => {
      const jobs = [run('report-2', img(D), '2026-12-02T10:05:00Z', failed)];
      expect(nextRunReadiness(cj(img(D)), jobs, { digest: D })).toEqual({
        ready: false,
        failed: 'BackoffLimitExceeded',
        message: 'run report-2: Job failed (BackoffLimitExceeded): Job has reached the specified backoff limit',
      });
    });
    it('ignores Jobs of other owners', () => {
      const other = { ...run('x', img(D), '2026-12-02T10:05:00Z', done) };
      other.metadata.ownerReferences = [{ kind: 'CronJob', name: 'report', uid: 'another-uid' }];
      expect(nextRunReadiness(cj(img(D)), [other], { digest: D }).ready).toBe(false);
    });
  });
});
