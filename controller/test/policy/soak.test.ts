import type { Candidate, EnvironmentVersion, PromotionPlan, SoakReset, Stage } from '@kpromo/api';
import { dg } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import {
  checkSoakResetDecision,
  type SoakAlert,
  type SoakCheckSample,
  soakClock,
  soakGate,
  soakResetDecision,
  withSoakReset,
} from '../../src/policy/soak.js';

const HOUR = 3_600_000;
const now = new Date('2026-03-02T12:00:00Z');
const cand = (application: string, digest = dg('a')): Candidate => ({ application, from: { tag: 'v1.2.3', digest } });
const version = (over: Partial<EnvironmentVersion>): EnvironmentVersion => ({
  environment: 'stable',
  digest: dg('a'),
  health: 'Healthy',
  ...over,
});
const gate = (candidates: Candidate[], versions: Record<string, EnvironmentVersion>, requiredMs = HOUR) =>
  soakGate({ candidates, source: (a) => versions[a], requiredMs, now });

describe('soakGate', () => {
  it('lets through a candidate that has been Healthy long enough', () => {
    const g = gate([cand('cart')], { cart: version({ healthySince: '2026-03-02T10:00:00Z' }) });
    expect(g.waiting).toEqual([]);
    expect(g.eligibleAt).toBeUndefined();
  });

  it('is eligible exactly when healthySince + required is reached', () => {
    const g = gate([cand('cart')], { cart: version({ healthySince: '2026-03-02T11:00:00Z' }) });
    expect(g.waiting).toEqual([]);
  });

  it('waits until the last candidate has soaked', () => {
    const g = gate([cand('cart'), cand('shop')], {
      cart: version({ healthySince: '2026-03-02T11:30:00Z' }),
      shop: version({ healthySince: '2026-03-02T11:45:00Z' }),
    });
    expect(g.waiting).toEqual([
      {
        application: 'cart',
        eligibleAt: new Date('2026-03-02T12:30:00Z'),
        reason: 'soaking until 2026-03-02T12:30:00.000Z',
      },
      {
        application: 'shop',
        eligibleAt: new Date('2026-03-02T12:45:00Z'),
        reason: 'soaking until 2026-03-02T12:45:00.000Z',
      },
    ]);
    expect(g.eligibleAt).toEqual(new Date('2026-03-02T12:45:00Z'));
  });

  it('a source running another digest has no eligibility time', () => {
    const g = gate([cand('cart'), cand('shop')], {
      cart: version({ digest: dg('b'), healthySince: '2026-03-01T00:00:00Z' }),
      shop: version({ healthySince: '2026-03-02T11:45:00Z' }),
    });
    expect(g.waiting[0].application).toBe('cart');
    expect(g.waiting[0].eligibleAt).toBeUndefined();
    expect(g.waiting[0].reason).toBe('source runs sha256:bbbbbbbbbbbb… not the candidate sha256:aaaaaaaaaaaa…');
    expect(g.waiting[1].eligibleAt).toEqual(new Date('2026-03-02T12:45:00Z'));
    expect(g.eligibleAt).toBeUndefined();
  });

  it('an unhealthy source waits with its health', () => {
    const g = gate([cand('cart')], { cart: version({ health: 'Degraded', healthySince: '2026-03-01T00:00:00Z' }) });
    expect(g.waiting).toEqual([{ application: 'cart', reason: 'not Healthy in source (Degraded)' }]);
    expect(g.eligibleAt).toBeUndefined();
  });

  it('waits when healthySince or the source version is missing', () => {
    const g = gate([cand('cart'), cand('ghost')], { cart: version({}) });
    expect(g.waiting.map((w) => w.application)).toEqual(['cart', 'ghost']);
    expect(g.waiting.every((w) => w.eligibleAt === undefined && w.reason.length > 0)).toBe(true);
    expect(g.eligibleAt).toBeUndefined();
  });

  it('requiredMs 0: nothing waits', () => {
    const g = gate([cand('cart')], { cart: version({ health: 'Degraded' }) }, 0);
    expect(g).toEqual({ waiting: [] });
  });
});

/** A restart recorded at `at` (minutes after 11:00 on the test day when a number). */
const reset = (at: string | number, fingerprint = 'f1', startsAt?: string): SoakReset => ({
  at: typeof at === 'number' ? new Date(Date.parse('2026-03-02T11:00:00Z') + at * 60_000).toISOString() : at,
  environment: 'stable',
  alert: 'WebErrors',
  fingerprint,
  ...(startsAt ? { startsAt } : {}),
  reason: `alert WebErrors (${fingerprint})`,
});

describe('soakClock: soak done / restarted at T because … / still soaking until T', () => {
  // The soak began at 11:00 and lasts an hour; now is 12:00 unless a row says otherwise.
  const since = new Date('2026-03-02T11:00:00Z');
  const rows: Array<{
    name: string;
    resets: SoakReset[];
    now?: string;
    state: 'done' | 'soaking';
    until: string;
    restartedBy?: string;
  }> = [
    { name: 'no restart: done at its end', resets: [], state: 'done', until: '2026-03-02T12:00:00.000Z' },
    {
      name: 'no restart, before its end: still soaking',
      resets: [],
      now: '2026-03-02T11:59:59Z',
      state: 'soaking',
      until: '2026-03-02T12:00:00.000Z',
    },
    {
      name: 'a restart during the soak: soaking until an hour after it, because of it',
      resets: [reset(30)],
      state: 'soaking',
      until: '2026-03-02T12:30:00.000Z',
      restartedBy: 'f1',
    },
    {
      name: 'restarted, then the restarted soak ran out: done, still saying which restart it counted from',
      resets: [reset(30)],
      now: '2026-03-02T12:30:00Z',
      state: 'done',
      until: '2026-03-02T12:30:00.000Z',
      restartedBy: 'f1',
    },
    {
      name: 'a restart before the soak began changes nothing',
      resets: [reset(-5)],
      state: 'done',
      until: '2026-03-02T12:00:00.000Z',
    },
    {
      name: 'a restart at or after the end (the soak was done) changes nothing',
      resets: [reset(60)],
      now: '2026-03-02T13:00:00Z',
      state: 'done',
      until: '2026-03-02T12:00:00.000Z',
    },
    {
      name: 'restarts chain: the second fell within the restarted soak, so the soak counts from it',
      resets: [reset(50, 'f2'), reset(30, 'f1')],
      state: 'soaking',
      until: '2026-03-02T12:50:00.000Z',
      restartedBy: 'f2',
    },
    {
      name: 'a restart past the end of the soak restarted before it does not count',
      resets: [reset(10, 'f1'), reset(75, 'f2')],
      now: '2026-03-02T12:30:00Z',
      state: 'done',
      until: '2026-03-02T12:10:00.000Z',
      restartedBy: 'f1',
    },
    {
      name: 'a restart whose time is no date is skipped',
      resets: [reset('yesterday')],
      state: 'done',
      until: '2026-03-02T12:00:00.000Z',
    },
  ];
  for (const r of rows)
    it(r.name, () => {
      const c = soakClock(since, HOUR, r.resets, new Date(r.now ?? '2026-03-02T12:00:00Z'));
      expect(c.state).toBe(r.state);
      expect(c.until.toISOString()).toBe(r.until);
      expect(c.restart?.fingerprint).toBe(r.restartedBy);
    });
});

describe('soakGate with restarts', () => {
  it('a candidate whose soak an alert restarted waits until an hour after the restart, and says which restart', () => {
    const g = soakGate({
      candidates: [cand('cart'), cand('shop')],
      source: () => version({ healthySince: '2026-03-02T11:00:00Z' }),
      requiredMs: HOUR,
      now: new Date('2026-03-02T11:40:00Z'),
      resets: [reset(30)],
    });
    expect(g.eligibleAt).toEqual(new Date('2026-03-02T12:30:00Z'));
    expect(g.restart?.fingerprint).toBe('f1');
    expect(g.waiting.map((w) => w.reason)).toEqual([
      'soaking until 2026-03-02T12:30:00.000Z',
      'soaking until 2026-03-02T12:30:00.000Z',
    ]);
  });

  it('a candidate that became Healthy after the restart soaks from then: the restart is not its reason', () => {
    const g = soakGate({
      candidates: [cand('cart')],
      source: () => version({ healthySince: '2026-03-02T11:45:00Z' }),
      requiredMs: HOUR,
      now,
      resets: [reset(30)],
    });
    expect(g.eligibleAt).toEqual(new Date('2026-03-02T12:45:00Z'));
    expect(g.restart).toBeUndefined();
  });
});

describe('soakResetDecision: which alerts restart which soaks', () => {
  const stage: Stage = {
    environment: 'prod',
    requiredSoakTime: '1h',
    soak: { resetOn: { alerts: [{ matchers: { app: 'web', severity: 'critical' } }, { matchers: { team: 'sre' } }] } },
  };
  const plan = (over: { status?: PromotionPlan['status']; action?: 'rollback' } = {}): PromotionPlan => ({
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { name: 'p', namespace: 'shop' },
    spec: {
      flow: 'main',
      from: 'stable',
      to: 'prod',
      candidates: [cand('web')],
      ...(over.action ? { action: over.action } : {}),
    },
    ...(over.status ? { status: over.status } : {}),
  });
  const alert = (labels: Record<string, string>, o: Partial<SoakAlert> = {}): SoakAlert => ({
    labels: { alertname: 'WebErrors', ...labels },
    fingerprint: 'f1',
    startsAt: '2026-03-02T11:29:00Z',
    summary: '5xx above 2%',
    ...o,
  });
  const critical = alert({ app: 'web', severity: 'critical', pod: 'web-1' });
  // The candidate has soaked in stable since 11:00; now is 11:30.
  const at = new Date('2026-03-02T11:30:00Z');
  const soaking = version({ healthySince: '2026-03-02T11:00:00Z' });
  const rows: Array<{
    name: string;
    plan?: PromotionPlan;
    stage?: Stage;
    alert?: SoakAlert;
    environment?: string;
    source?: EnvironmentVersion;
    now?: Date;
    why?: string;
  }> = [
    { name: 'a matching alert for the soaking environment restarts it' },
    { name: 'the second entry matches on its own', alert: alert({ team: 'sre' }) },
    {
      name: 'an alert carrying only some of an entry’s matchers does not',
      alert: alert({ app: 'web', severity: 'warning' }),
      why: 'matches no soak.resetOn.alerts entry of stage prod',
    },
    { name: 'an alert for another environment does not', environment: 'prod', why: 'soaks in stable, not prod' },
    {
      name: 'a stage without soak.resetOn does not restart',
      stage: { environment: 'prod', requiredSoakTime: '1h' },
      why: 'stage prod has no requiredSoakTime with soak.resetOn.alerts',
    },
    {
      name: 'a stage whose requiredSoakTime is gone does not restart (nothing soaks)',
      stage: { environment: 'prod', soak: stage.soak },
      why: 'stage prod has no requiredSoakTime with soak.resetOn.alerts',
    },
    { name: 'a rollback waits on no soak', plan: plan({ action: 'rollback' }), why: 'a rollback waits on no soak' },
    {
      name: 'a plan that started no longer soaks',
      plan: plan({ status: { phase: 'Promoting', startedAt: '2026-03-02T11:10:00Z' } }),
      why: 'started: it no longer waits on a soak',
    },
    {
      name: 'a repeat of the firing that restarted it (same fingerprint and startsAt) records nothing',
      plan: plan({ status: { phase: 'Pending', soakResets: [reset(20, 'f1', '2026-03-02T11:29:00Z')] } }),
      why: 'a repeat of the firing that restarted the soak at 2026-03-02T11:20:00.000Z',
    },
    {
      name: 'the same alert firing again (a new startsAt) restarts it again',
      plan: plan({ status: { phase: 'Pending', soakResets: [reset(20, 'f1', '2026-03-02T11:19:00Z')] } }),
    },
    {
      name: 'a soak that is over is not restarted',
      now: new Date('2026-03-02T12:00:00Z'),
      why: 'no candidate is soaking in stable now (soaked, or its soak has not begun)',
    },
    {
      name: 'a soak whose clock has not started (not Healthy in the source) is not restarted',
      source: version({ health: 'Progressing' }),
      why: 'no candidate is soaking in stable now (soaked, or its soak has not begun)',
    },
  ];
  for (const r of rows)
    it(r.name, () => {
      const d = soakResetDecision({
        plan: r.plan ?? plan({ status: { phase: 'Pending' } }),
        stage: 'stage' in r ? r.stage : stage,
        alert: r.alert ?? critical,
        environment: r.environment ?? 'stable',
        source: () => r.source ?? soaking,
        by: 'alertmanager',
        now: r.now ?? at,
      });
      if (r.why) expect(d).toEqual({ op: 'ignore', why: r.why });
      else expect(d.op).toBe('reset');
    });

  it('records when (receipt), where, which alert and firing, why (the matchers it matched, its summary) and who sent it', () => {
    const d = soakResetDecision({
      plan: plan(),
      stage,
      alert: critical,
      environment: 'stable',
      source: () => soaking,
      by: 'alertmanager',
      now: at,
    });
    expect(d).toEqual({
      op: 'reset',
      reset: {
        at: '2026-03-02T11:30:00Z',
        environment: 'stable',
        alert: 'WebErrors',
        fingerprint: 'f1',
        startsAt: '2026-03-02T11:29:00Z',
        reason: 'alert WebErrors{app="web",severity="critical"}: 5xx above 2%',
        by: 'alertmanager',
      },
    });
  });

  it('keeps the latest 20 restarts', () => {
    const many = Array.from({ length: 20 }, (_, i) => reset(i, `f${i}`));
    const kept = withSoakReset(many, reset(30, 'last'));
    expect(kept).toHaveLength(20);
    expect(kept[0].fingerprint).toBe('f1');
    expect(kept[19].fingerprint).toBe('last');
  });
});

describe('checkSoakResetDecision: which failed check samples restart which soaks', () => {
  const stage: Stage = { environment: 'prod', requiredSoakTime: '1h', soak: { resetOn: { failedChecks: true } } };
  const plan = (over: { status?: PromotionPlan['status']; action?: 'rollback' } = {}): PromotionPlan => ({
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { name: 'p', namespace: 'shop' },
    spec: {
      flow: 'main',
      from: 'stable',
      to: 'prod',
      candidates: [cand('web'), cand('api')],
      ...(over.action ? { action: over.action } : {}),
    },
    status: over.status ?? { phase: 'Pending' },
  });
  const failed: SoakCheckSample = {
    application: 'web',
    check: 'error-rate',
    ok: false,
    detail: 'value 0.2, must be at most 0.05',
  };
  // web has soaked in stable since 11:00 (now 11:30); api only since 10:00, so it has soaked.
  const at = new Date('2026-03-02T11:30:00Z');
  const sources: Record<string, EnvironmentVersion> = {
    web: version({ healthySince: '2026-03-02T11:00:00Z' }),
    api: version({ healthySince: '2026-03-02T10:00:00Z' }),
  };
  const rows: Array<{
    name: string;
    plan?: PromotionPlan;
    stage?: Stage;
    samples?: SoakCheckSample[];
    now?: Date;
    cause?: string;
    why?: string;
  }> = [
    { name: 'a failed sample of a soaking candidate restarts it', cause: 'error-rate' },
    {
      name: 'the first failed sample of a soaking candidate is the cause; a pass or no data is none',
      samples: [
        { application: 'web', check: 'latency', ok: true },
        { application: 'web', check: 'http', ok: undefined },
        failed,
        { application: 'web', check: 'app/smoke', ok: false },
      ],
      cause: 'error-rate',
    },
    {
      name: 'no data is no failure',
      samples: [{ ...failed, ok: undefined }],
      why: 'no sample failed (no data is no failure)',
    },
    {
      name: 'passing samples restart nothing',
      samples: [{ ...failed, ok: true }],
      why: 'no sample failed (no data is no failure)',
    },
    {
      name: 'a failed sample of a candidate that has soaked already restarts nothing',
      samples: [{ ...failed, application: 'api' }],
      why: 'no candidate whose check failed is soaking in stable now (soaked, or its soak has not begun)',
    },
    {
      name: 'a soak that is over is not restarted',
      now: new Date('2026-03-02T12:00:00Z'),
      why: 'no candidate whose check failed is soaking in stable now (soaked, or its soak has not begun)',
    },
    {
      name: 'a stage whose soak.resetOn has only alerts is not restarted by checks',
      stage: { ...stage, soak: { resetOn: { alerts: [{ matchers: { app: 'web' } }] } } },
      why: 'stage prod has no requiredSoakTime with soak.resetOn.failedChecks',
    },
    {
      name: 'a stage without requiredSoakTime soaks nothing',
      stage: { environment: 'prod', soak: stage.soak },
      why: 'stage prod has no requiredSoakTime with soak.resetOn.failedChecks',
    },
    { name: 'a rollback waits on no soak', plan: plan({ action: 'rollback' }), why: 'a rollback waits on no soak' },
    {
      name: 'a plan that started no longer soaks',
      plan: plan({ status: { phase: 'Promoting', startedAt: '2026-03-02T11:10:00Z' } }),
      why: 'started: it no longer waits on a soak',
    },
  ];
  for (const r of rows)
    it(r.name, () => {
      const d = checkSoakResetDecision({
        plan: r.plan ?? plan(),
        stage: 'stage' in r ? r.stage : stage,
        samples: r.samples ?? [failed],
        source: (a) => sources[a],
        now: r.now ?? at,
      });
      if (r.why) expect(d).toEqual({ op: 'ignore', why: r.why });
      else expect(d.op === 'reset' && d.reset.check).toBe(r.cause);
    });

  it('records when (the sample), where, which check of which app and why (its value and condition)', () => {
    expect(
      checkSoakResetDecision({ plan: plan(), stage, samples: [failed], source: (a) => sources[a], now: at }),
    ).toEqual({
      op: 'reset',
      reset: {
        at: '2026-03-02T11:30:00Z',
        environment: 'stable',
        check: 'error-rate',
        application: 'web',
        reason: 'check error-rate of web failed in stable: value 0.2, must be at most 0.05',
      },
    });
  });

  it('restarted at 11:30, web soaks until 12:30 and the gate names the check as the restart', () => {
    const d = checkSoakResetDecision({ plan: plan(), stage, samples: [failed], source: (a) => sources[a], now: at });
    if (d.op !== 'reset') throw new Error(d.why);
    const g = soakGate({
      candidates: plan().spec.candidates,
      source: (a) => sources[a],
      requiredMs: HOUR,
      now: at,
      resets: [d.reset],
    });
    expect(g.eligibleAt?.toISOString()).toBe('2026-03-02T12:30:00.000Z');
    expect(g.restart?.reason).toContain('check error-rate of web failed');
  });
});
