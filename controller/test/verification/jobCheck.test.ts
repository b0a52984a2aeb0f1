import type { VerificationCheck } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import type { CheckContext, CheckVars, CheckWindow } from '../../src/extension/checkProvider.js';
import { KubeError, type KubeRest } from '../../src/kube/rest.js';
import {
  foreignJob,
  type JobLike,
  jobCheckProblems,
  jobManifest,
  jobName,
  jobOutcome,
  jobProvider,
  logTail,
} from '../../src/verification/providers/job.js';
import { conditionText, foldMeasurements, startVerification } from '../../src/verification/verdict.js';

const vars: CheckVars = {
  application: 'checkout',
  namespace: 'shop',
  environment: 'stable',
  version: 'v1.2.0',
  previousVersion: 'v1.1.0',
  digest: 'sha256:abc',
};
const window: CheckWindow = {
  plan: 'rel-42',
  planUID: 'uid-1',
  startedAt: '2026-01-01T00:00:00.000Z',
  endsAt: '2026-01-01T00:05:00.000Z',
  failureLimit: 2,
  now: new Date('2026-01-01T00:00:00.000Z'),
};
const check: VerificationCheck = {
  name: 'smoke',
  job: {
    image: 'registry.example/smoke:{version}',
    command: ['/smoke'],
    args: ['--url', '{application}.{namespace}'],
    env: [{ name: 'MODE', value: 'quick {digest}' }],
    resources: { limits: { cpu: '100m', memory: '64Mi' } },
  },
};

describe('jobCheckProblems', () => {
  const cases: Array<[string, unknown, string[]]> = [
    ['the narrow template', check.job, []],
    ['no object', 'x', ['job must be an object with an image']],
    ['no image', {}, ['job.image must be an image reference without spaces']],
    [
      'host access and privileges',
      { image: 'a', volumes: [{ hostPath: { path: '/' } }], securityContext: { privileged: true } },
      [
        'job.volumes is not allowed (a job check sets only image, command, args, env, endpoint, resources)',
        'job.securityContext is not allowed (a job check sets only image, command, args, env, endpoint, resources)',
      ],
    ],
    [
      'a service account of its own',
      { image: 'a', serviceAccountName: 'admin' },
      ['job.serviceAccountName is not allowed (a job check sets only image, command, args, env, endpoint, resources)'],
    ],
    [
      'env from a Secret',
      { image: 'a', env: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] },
      [
        'job.env[0].valueFrom is not allowed (a job check sets only name, value); values come from the check, never from Secrets',
        'job.env[0].value must be a string',
      ],
    ],
    [
      "kpromo's variables",
      { image: 'a', env: [{ name: 'KPROMO_VERSION', value: 'v0' }] },
      ['job.env[0].name KPROMO_VERSION: KPROMO_ variables are set by kpromo'],
    ],
    [
      'resources beyond cpu and memory',
      { image: 'a', resources: { limits: { 'nvidia.com/gpu': '1' }, claims: [] } },
      [
        'job.resources.claims is not allowed (a job check sets only requests, limits)',
        'job.resources.limits.nvidia.com/gpu is not allowed (a job check sets only cpu, memory)',
      ],
    ],
    ['a command that is not a list', { image: 'a', command: 'sh -c x' }, ['job.command must be a list of strings']],
  ];
  for (const [title, job, want] of cases) it(title, () => expect(jobCheckProblems(job)).toEqual(want));
});

describe('jobName', () => {
  it('is the same for one window and differs for another plan, cluster, check or window', () => {
    const n = jobName(window, 'checkout', 'smoke');
    expect(n).toMatch(/^kpromo-checkout-smoke-[0-9a-f]{10}$/);
    expect(jobName({ ...window }, 'checkout', 'smoke')).toBe(n);
    for (const other of [
      jobName({ ...window, planUID: 'uid-2' }, 'checkout', 'smoke'),
      jobName({ ...window, cluster: 'eu' }, 'checkout', 'smoke'),
      jobName({ ...window, startedAt: '2026-01-01T01:00:00.000Z' }, 'checkout', 'smoke'),
      jobName(window, 'checkout', 'app/smoke'),
    ])
      expect(other).not.toBe(n);
  });

  it('is a DNS label for long and odd names', () => {
    const n = jobName(window, 'a'.repeat(60), 'App/Smoke_Test');
    expect(n.length).toBeLessThanOrEqual(63);
    expect(n).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(jobName(window, 'checkout', 'app/smoke')).toMatch(/^kpromo-checkout-app-smoke-/);
  });
});

describe('jobManifest', () => {
  const m = jobManifest(check, vars, window);
  const pod = (m.spec as { template: { spec: Record<string, unknown> } }).template.spec;
  const c = (pod.containers as Array<Record<string, unknown>>)[0]!;

  it('runs the template with placeholders replaced and the KPROMO_ variables', () => {
    expect(c).toMatchObject({
      name: 'check',
      image: 'registry.example/smoke:v1.2.0',
      command: ['/smoke'],
      args: ['--url', 'checkout.shop'],
      resources: { limits: { cpu: '100m', memory: '64Mi' } },
    });
    expect(c.env).toEqual([
      { name: 'MODE', value: 'quick sha256:abc' },
      { name: 'KPROMO_APPLICATION', value: 'checkout' },
      { name: 'KPROMO_ENVIRONMENT', value: 'stable' },
      { name: 'KPROMO_NAMESPACE', value: 'shop' },
      { name: 'KPROMO_VERSION', value: 'v1.2.0' },
      { name: 'KPROMO_PREVIOUS_VERSION', value: 'v1.1.0' },
      { name: 'KPROMO_DIGEST', value: 'sha256:abc' },
      { name: 'KPROMO_ENDPOINT', value: 'http://checkout.shop.svc' },
    ]);
    const first = jobManifest(
      { name: 'e2e', job: { image: 'i', endpoint: 'https://{application}.example/{previousVersion}' } },
      { ...vars, previousVersion: undefined },
      window,
    );
    const env = (first.spec as { template: { spec: { containers: Array<{ env: unknown[] }> } } }).template.spec
      .containers[0]!.env;
    expect(env).toContainEqual({ name: 'KPROMO_PREVIOUS_VERSION', value: '' });
    expect(env).toContainEqual({ name: 'KPROMO_ENDPOINT', value: 'https://checkout.example/' });
  });

  it('retries up to the failure limit and stops at the end of the window', () => {
    expect(m.spec).toMatchObject({ backoffLimit: 2, activeDeadlineSeconds: 300 });
    const late = jobManifest(check, vars, { ...window, now: new Date('2026-01-01T00:04:30.500Z') });
    expect(late.spec).toMatchObject({ activeDeadlineSeconds: 30 });
    expect(m.metadata).toMatchObject({ name: jobName(window, 'checkout', 'smoke'), namespace: 'shop' });
  });

  it('has no privileges and no token unless the stage names its service account', () => {
    expect(pod).toMatchObject({ restartPolicy: 'Never', automountServiceAccountToken: false });
    expect(pod.serviceAccountName).toBeUndefined();
    expect(pod.volumes).toBeUndefined();
    expect(c.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      privileged: false,
      capabilities: { drop: ['ALL'] },
    });
    const governed = jobManifest(check, vars, { ...window, serviceAccount: 'smoke-runner' });
    expect((governed.spec as { template: { spec: unknown } }).template.spec).toMatchObject({
      serviceAccountName: 'smoke-runner',
      automountServiceAccountToken: true,
    });
  });
});

describe('foreignJob', () => {
  const mine = jobManifest(check, vars, window);
  it('accepts the Job the check makes, refuses one made beforehand or for another template', () => {
    expect(foreignJob(structuredClone(mine), mine)).toBeUndefined();
    const unlabelled = structuredClone(mine);
    unlabelled.metadata.labels = {};
    expect(foreignJob(unlabelled, mine)).toMatch(/was not made by kpromo/);
    const other = jobManifest({ ...check, job: { ...check.job!, command: ['true'] } }, vars, window);
    expect(foreignJob(other, mine)).toMatch(/does not run this check's image, command, args and env/);
    const sa = jobManifest(check, vars, { ...window, serviceAccount: 'admin' });
    expect(foreignJob(sa, mine)).toMatch(/runs as service account "admin"/);
  });
});

describe('jobOutcome', () => {
  const job = (status: JobLike['status']): JobLike => ({ metadata: { name: 'j' }, status });
  const cases: Array<[string, JobLike['status'], ReturnType<typeof jobOutcome>]> = [
    ['no status yet', undefined, { done: false, message: 'Job j waiting for its pod' }],
    ['running', { active: 1 }, { done: false, message: 'Job j running' }],
    ['retrying', { active: 1, failed: 1 }, { done: false, message: 'Job j running (1 failed attempt(s), retrying)' }],
    [
      'complete',
      {
        startTime: '2026-01-01T00:00:01Z',
        completionTime: '2026-01-01T00:00:13Z',
        succeeded: 1,
        conditions: [{ type: 'Complete', status: 'True' }],
      },
      { done: true, ok: true, durationSeconds: 12, message: 'Job j succeeded in 12s' },
    ],
    [
      'failed after its retries',
      {
        startTime: '2026-01-01T00:00:01Z',
        failed: 3,
        conditions: [
          { type: 'FailureTarget', status: 'True' },
          {
            type: 'Failed',
            status: 'True',
            reason: 'BackoffLimitExceeded',
            message: 'Job has reached the specified backoff limit',
            lastTransitionTime: '2026-01-01T00:00:04Z',
          },
        ],
      },
      {
        done: true,
        ok: false,
        durationSeconds: 3,
        message:
          'Job j failed in 3s after 3 attempt(s): BackoffLimitExceeded (Job has reached the specified backoff limit)',
      },
    ],
    [
      'a failure target that is not final yet',
      { active: 1, conditions: [{ type: 'FailureTarget', status: 'True' }] },
      { done: false, message: 'Job j running' },
    ],
  ];
  for (const [title, status, want] of cases) it(title, () => expect(jobOutcome(job(status))).toEqual(want));
});

describe('logTail', () => {
  const cases: Array<[string, string | undefined, string | undefined]> = [
    ['no log', undefined, undefined],
    ['an empty log', '', undefined],
    ['only blank lines', '\n\n  \n', undefined],
    ['a short log', 'ok 1\nok 2\n', 'ok 1\nok 2'],
    ['the last 20 lines', Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n'), undefined],
    ['terminal colours and control characters', '\x1b[32mPASS\x1b[0m 3 tests\x07\r\n', 'PASS 3 tests'],
  ];
  for (const [title, text, want] of cases)
    it(title, () => {
      const got = logTail(text);
      if (title === 'the last 20 lines') {
        expect(got?.split('\n')).toHaveLength(20);
        expect(got?.split('\n')[0]).toBe('line 10');
      } else expect(got).toBe(want);
    });

  it('keeps the end of a long log within its characters', () => {
    const got = logTail(`${'x'.repeat(5000)}\nlast`, 20, 100)!;
    expect(got).toHaveLength(100);
    expect(got.startsWith('…')).toBe(true);
    expect(got.endsWith('\nlast')).toBe(true);
  });
});

/** A target cluster that holds Jobs in memory; `pods` and `log` answer the log lookups. */
function fakeCluster(o: { log?: string | Error; conflictOnCreate?: JobLike } = {}) {
  const jobs = new Map<string, JobLike>();
  const calls: string[] = [];
  const notFound = (path: string) => new KubeError(404, 'NotFound', 'GET', path, 'stable', 'not found');
  const client = {
    async getOrUndefined<T>(path: string) {
      calls.push(`get ${path}`);
      return jobs.get(path.split('/').at(-1)!) as T | undefined;
    },
    async get<T>(path: string) {
      calls.push(`get ${path}`);
      if (path.includes('/pods?'))
        return { items: [{ metadata: { name: 'p1', creationTimestamp: '2026-01-01T00:00:01Z' } }] } as T;
      const j = jobs.get(path.split('/').at(-1)!);
      if (!j) throw notFound(path);
      return j as T;
    },
    async create<T>(path: string, body: JobLike) {
      calls.push(`create ${path}`);
      if (o.conflictOnCreate) {
        jobs.set(body.metadata.name, o.conflictOnCreate);
        throw new KubeError(409, 'AlreadyExists', 'POST', path, 'stable', 'exists');
      }
      jobs.set(body.metadata.name, structuredClone(body));
      return body as T;
    },
    async getText(path: string) {
      calls.push(`log ${path}`);
      if (o.log instanceof Error) throw o.log;
      return o.log ?? '';
    },
  };
  return { jobs, calls, client: client as unknown as KubeRest };
}

const ctxOf = (client: KubeRest, w: CheckWindow = window): CheckContext =>
  ({ vars, window: w, client: async () => client }) as unknown as CheckContext;

describe('jobProvider.measure', () => {
  const name = jobName(window, 'checkout', 'smoke');
  const finish = (j: JobLike, ok: boolean) => {
    j.status = {
      startTime: '2026-01-01T00:00:01Z',
      completionTime: ok ? '2026-01-01T00:00:05Z' : undefined,
      conditions: [
        ok
          ? { type: 'Complete', status: 'True' }
          : {
              type: 'Failed',
              status: 'True',
              reason: 'BackoffLimitExceeded',
              lastTransitionTime: '2026-01-01T00:00:05Z',
            },
      ],
    };
  };

  it('creates the Job once, waits without data, then passes with its duration and log tail', async () => {
    const k = fakeCluster({ log: 'smoke: 12 passed\n' });
    const first = await jobProvider.measure(check, ctxOf(k.client));
    expect(first).toEqual({ query: `Job shop/${name}`, message: `Job ${name} waiting for its pod` });
    await jobProvider.measure(check, ctxOf(k.client));
    expect(k.calls.filter((c) => c.startsWith('create'))).toHaveLength(1);
    finish(k.jobs.get(name)!, true);
    expect(await jobProvider.measure(check, ctxOf(k.client))).toEqual({
      query: `Job shop/${name}`,
      ok: true,
      final: true,
      durationSeconds: 4,
      output: 'smoke: 12 passed',
      message: `Job ${name} succeeded in 4s`,
    });
  });

  it('says so when there are no logs, and a failed Job fails the check at once', async () => {
    const k = fakeCluster({ log: new Error('the node served no logs') });
    await jobProvider.measure(check, ctxOf(k.client));
    finish(k.jobs.get(name)!, false);
    const m = await jobProvider.measure(check, ctxOf(k.client));
    expect(m).toMatchObject({ ok: false, final: true, durationSeconds: 4 });
    expect(m.output).toBeUndefined();
    expect(m.message).toBe(`Job ${name} failed in 4s: BackoffLimitExceeded; no logs: the node served no logs`);
    const quiet = fakeCluster({ log: '' });
    await jobProvider.measure(check, ctxOf(quiet.client));
    finish(quiet.jobs.get(name)!, true);
    expect((await jobProvider.measure(check, ctxOf(quiet.client))).message).toMatch(
      /succeeded in 4s; no logs: the container printed nothing$/,
    );
  });

  it('reads the Job an earlier round made when the create conflicts, and refuses one made by someone else', async () => {
    const ours = jobManifest(check, vars, window);
    const k = fakeCluster({ conflictOnCreate: ours });
    expect((await jobProvider.measure(check, ctxOf(k.client))).message).toBe(`Job ${name} waiting for its pod`);
    const planted = structuredClone(ours);
    planted.metadata.labels = {};
    finish(planted, true);
    const bad = fakeCluster({ conflictOnCreate: planted });
    expect(await jobProvider.measure(check, ctxOf(bad.client))).toMatchObject({
      ok: false,
      final: true,
      message: `Job ${name} exists but was not made by kpromo: its result is not evidence`,
    });
  });

  it('creates nothing once the window is over, and refuses a template outside the narrow one', async () => {
    const k = fakeCluster();
    const over = await jobProvider.measure(check, ctxOf(k.client, { ...window, now: new Date(window.endsAt) }));
    expect(over).toEqual({ query: `Job shop/${name}`, message: `Job ${name} was not created: the window ended first` });
    expect(k.calls.some((c) => c.startsWith('create'))).toBe(false);
    const wide = { name: 'smoke', job: { image: 'i', serviceAccountName: 'admin' } } as unknown as VerificationCheck;
    expect(await jobProvider.measure(wide, ctxOf(k.client))).toMatchObject({
      ok: false,
      final: true,
      message: expect.stringContaining('check smoke: job.serviceAccountName is not allowed'),
    });
  });
});

describe('a job check in the verdict', () => {
  it('says what passes, and its duration and log tail land in the check status', () => {
    expect(conditionText(check)).toBe('Job completes');
    const s = {
      checks: [check],
      windowMs: 300_000,
      intervalMs: 10_000,
      failureLimit: 0,
      minSamples: 3,
      onFailure: 'stop' as const,
    };
    const start = startVerification(s, new Date(window.startedAt));
    expect(start.checks[0]).toMatchObject({ kind: 'job', condition: 'Job completes' });
    const done = foldMeasurements(
      start,
      s,
      new Map([
        ['smoke', { ok: true, final: true, durationSeconds: 4, output: 'ok', message: 'Job j succeeded in 4s' }],
      ]),
      new Date('2026-01-01T00:00:10Z'),
    );
    expect(done.verdict).toBe('Passed');
    expect(done.checks[0]).toMatchObject({ verdict: 'Passed', durationSeconds: 4, output: 'ok' });
  });
});
