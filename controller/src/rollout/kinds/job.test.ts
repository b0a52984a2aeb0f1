import { describe, expect, it } from 'vitest';
import { type Job, jobReady } from './job.js';

const job = (status: Job['status'], spec: Job['spec'] = {}): Job => ({
  kind: 'Job',
  metadata: { name: 'migrate' },
  spec: { backoffLimit: 2, ...spec },
  status,
});
const cond = (type: string, reason?: string, message?: string) => ({ type, status: 'True', reason, message });

describe('jobReady (Job conditions as the Job controller writes them)', () => {
  it('waits while pods run', () => {
    expect(jobReady(job({ active: 1, failed: 1 }))).toEqual({
      ready: false,
      message: 'Job running: 1 active, 0 succeeded, 1 failed (backoffLimit 2)',
    });
  });
  it('is Succeeded once Complete', () => {
    const j = job({ succeeded: 1, conditions: [cond('SuccessCriteriaMet'), cond('Complete')] });
    expect(jobReady(j)).toEqual({ ready: true, message: 'Job completed (1 succeeded)' });
  });
  it('fails past its backoffLimit with the reason', () => {
    const j = job({
      failed: 3,
      conditions: [
        cond('FailureTarget', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit'),
        cond('Failed', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit'),
      ],
    });
    expect(jobReady(j)).toEqual({
      ready: false,
      failed: 'BackoffLimitExceeded',
      message: 'Job failed (BackoffLimitExceeded): Job has reached the specified backoff limit',
    });
  });
  it('fails already on FailureTarget (the pods are still terminating) and on DeadlineExceeded', () => {
    expect(
      jobReady(
        job({
          conditions: [cond('FailureTarget', 'DeadlineExceeded', 'Job was active longer than specified deadline')],
        }),
      ),
    ).toMatchObject({
      failed: 'DeadlineExceeded',
    });
  });
  it('a suspended Job waits as Paused', () => {
    expect(
      jobReady(job({ conditions: [cond('Suspended', 'JobSuspended', 'Job suspended')] }, { suspend: true })),
    ).toEqual({
      ready: false,
      paused: true,
      message: 'Job is suspended (spec.suspend); 0 active, 0 succeeded, 0 failed',
    });
  });
  it('a False condition is no verdict', () => {
    expect(jobReady(job({ active: 1, conditions: [{ type: 'Failed', status: 'False' }] })).ready).toBe(false);
    expect(jobReady(job({ active: 1, conditions: [{ type: 'Failed', status: 'False' }] })).failed).toBeUndefined();
  });
});
