import type { Application, PromotionFlow, VerificationCheck } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { promqlString, renderTemplate } from '../../src/verification/placeholders.js';
import { type VerificationSettings, verificationFor } from '../../src/verification/settings.js';
import {
  conditionText,
  failedCheck,
  foldMeasurements,
  judge,
  type Measurement,
  requiredSamples,
  startVerification,
  verdictReason,
  withoutChecks,
} from '../../src/verification/verdict.js';

const errorRate: VerificationCheck = { name: 'error-rate', prometheus: { query: 'x', max: 0.05 } };
const latency: VerificationCheck = {
  name: 'latency',
  prometheus: { query: 'y', baseline: { maxRatio: 1.5 } },
};
const settings = (over: Partial<VerificationSettings> = {}): VerificationSettings => ({
  checks: [errorRate],
  windowMs: 60_000,
  intervalMs: 20_000,
  failureLimit: 0,
  minSamples: 3,
  onFailure: 'stop',
  ...over,
});
const t0 = new Date('2026-12-05T10:00:00Z');
const at = (s: number) => new Date(t0.getTime() + s * 1000);
const round = (m: Record<string, Measurement>) => new Map(Object.entries(m));

describe('judge', () => {
  it('holds a value against max, min and the replaced version', () => {
    expect(judge(errorRate, { value: 0.05 })).toBe(true);
    expect(judge(errorRate, { value: 0.051 })).toBe(false);
    expect(judge({ name: 'rps', prometheus: { query: 'q', min: 10 } }, { value: 9.9 })).toBe(false);
    expect(judge(latency, { value: 0.3, baseline: 0.2 })).toBe(true); // 0.3 ≤ 1.5 × 0.2
    expect(judge(latency, { value: 0.31, baseline: 0.2 })).toBe(false);
    const inc: VerificationCheck = { name: 'inc', prometheus: { query: 'q', baseline: { maxIncrease: 0.01 } } };
    expect(judge(inc, { value: 0.02, baseline: 0.01 })).toBe(true);
    expect(judge(inc, { value: 0.0201, baseline: 0.01 })).toBe(false);
  });

  it('has nothing to judge without data, or without a baseline for a baseline-only check', () => {
    expect(judge(errorRate, {})).toBeUndefined();
    expect(judge(errorRate, { value: Number.NaN })).toBeUndefined();
    expect(judge(latency, { value: 1 })).toBeUndefined();
    // A bounded check with a baseline is still judged by its bounds when the baseline has no data.
    const both: VerificationCheck = { name: 'b', prometheus: { query: 'q', max: 1, baseline: { maxRatio: 2 } } };
    expect(judge(both, { value: 0.5 })).toBe(true);
    expect(judge(both, { value: 1.5 })).toBe(false);
  });

  it('takes the verdict of providers that judge themselves', () => {
    expect(judge({ name: 'smoke', http: { url: 'https://x' } }, { value: 500, ok: false })).toBe(false);
  });

  it('says the condition in words', () => {
    expect(conditionText(errorRate)).toBe('≤ 0.05');
    expect(conditionText(latency)).toBe('≤ 1.5 × previous');
    expect(conditionText({ name: 's', http: { url: 'https://x', expectStatus: 204 } })).toBe('answers 204');
  });
});

describe('foldMeasurements', () => {
  it('passes at the end of the window with enough good samples', () => {
    const s = settings();
    let p = startVerification(s, t0);
    expect(p.endsAt).toBe(at(60).toISOString());
    p = foldMeasurements(p, s, round({ 'error-rate': { value: 0.01 } }), at(0));
    expect(p.verdict).toBe('Running');
    expect(p.nextAt).toBe(at(20).toISOString());
    p = foldMeasurements(p, s, round({ 'error-rate': { value: 0.02 } }), at(20));
    p = foldMeasurements(p, s, round({ 'error-rate': { value: 0.03 } }), at(40));
    expect(p.verdict).toBe('Running');
    p = foldMeasurements(p, s, round({ 'error-rate': { value: 0.01 } }), at(60));
    expect(p.verdict).toBe('Passed');
    expect(p.finishedAt).toBe(at(60).toISOString());
    expect(p.checks[0]!.samples!.map((x) => x.value)).toEqual([0.01, 0.02, 0.03, 0.01]);
    expect(p.checks[0]).toMatchObject({ measured: 4, failures: 0, condition: '≤ 0.05' });
  });

  it('fails at once when failures exceed the limit, not before', () => {
    const s = settings({ failureLimit: 1 });
    let p = startVerification(s, t0);
    p = foldMeasurements(p, s, round({ 'error-rate': { value: 0.2 } }), at(0));
    expect(p.verdict).toBe('Running'); // one failure is within the limit (noisy metrics)
    p = foldMeasurements(p, s, round({ 'error-rate': { value: 0.3 } }), at(20));
    expect(p.verdict).toBe('Failed');
    expect(p.checks[0]!.message).toBe('2 failed measurement(s), limit 1');
    expect(failedCheck(p)).toEqual({
      check: 'error-rate',
      message: 'check error-rate failed (last value 0.3, must be ≤ 0.05): 2 failed measurement(s), limit 1',
    });
  });

  it('is Inconclusive when the window ends with too few samples: no data is not evidence', () => {
    const s = settings();
    let p = startVerification(s, t0);
    p = foldMeasurements(p, s, round({ 'error-rate': { value: 0.01 } }), at(0));
    p = foldMeasurements(p, s, round({ 'error-rate': { message: 'no series' } }), at(20));
    p = foldMeasurements(p, s, round({ 'error-rate': { message: 'no series' } }), at(60));
    expect(p.verdict).toBe('Inconclusive');
    expect(p.checks[0]!.message).toBe('1 measurement(s) with data by the end of the window, 3 needed; last: no series');
    expect(p.checks[0]!.samples!.filter((x) => x.ok === undefined)).toHaveLength(2);
  });

  it('ends a check on a final provider verdict and waits for the others', () => {
    const analysis: VerificationCheck = { name: 'analysis', analysis: {} };
    const s = settings({ checks: [errorRate, analysis] });
    let p = startVerification(s, t0);
    p = foldMeasurements(
      p,
      s,
      round({
        'error-rate': { value: 0 },
        analysis: { ok: true, final: true, message: '1 AnalysisRun(s) Successful' },
      }),
      at(0),
    );
    expect(p.checks.map((c) => c.verdict)).toEqual(['Running', 'Passed']);
    expect(p.verdict).toBe('Running');
  });

  it('fails a check removed from the stage or the Application during the window, naming it (never passes it)', () => {
    const s = settings({ checks: [errorRate, latency] });
    const started = startVerification(s, t0);
    const removed = (after: VerificationSettings, measured: Record<string, Measurement>, sec: number) =>
      foldMeasurements(started, after, round(measured), at(sec));
    // [what remains, measured then, verdict, the check that decides, reason]
    const table: Array<[string, VerificationSettings, Record<string, Measurement>, string, string, string]> = [
      [
        'one of two removed',
        settings({ checks: [errorRate] }),
        { 'error-rate': { value: 0 } },
        'Failed',
        'latency',
        'VerificationRemoved',
      ],
      ['every check removed', withoutChecks(started), {}, 'Failed', 'error-rate', 'VerificationRemoved'],
      [
        'removed at the end of the window',
        settings({ checks: [errorRate] }),
        { 'error-rate': { value: 0 } },
        'Failed',
        'latency',
        'VerificationRemoved',
      ],
      [
        'the remaining check failed first',
        settings({ checks: [errorRate] }),
        { 'error-rate': { value: 1 } },
        'Failed',
        'error-rate',
        'VerificationFailed',
      ],
      ['nothing removed', s, { 'error-rate': { value: 0 }, latency: { value: 1, baseline: 1 } }, 'Running', '', ''],
    ];
    for (const [what, after, measured, verdict, check, reason] of table) {
      const p = removed(after, measured, what === 'removed at the end of the window' ? 60 : 0);
      expect(p.verdict, what).toBe(verdict);
      if (verdict === 'Running') continue;
      expect(failedCheck(p)?.check, what).toBe(check);
      expect(verdictReason(p), what).toBe(reason);
    }
    const p = removed(settings({ checks: [errorRate] }), { 'error-rate': { value: 0 } }, 0);
    expect(p.checks[1]).toMatchObject({ name: 'latency', verdict: 'Failed', removed: true });
    expect(failedCheck(p)?.message).toBe(
      'check latency failed: removed from the verification during the window, after 0 measurement(s): a check removed before its verdict fails the release',
    );
    expect(withoutChecks(started)).toMatchObject({ checks: [], onFailure: 'stop' });
  });

  it('caps the samples kept per check', () => {
    const s = settings({ windowMs: 3_600_000, intervalMs: 1_000 });
    let p = startVerification(s, t0);
    for (let i = 0; i < 70; i++) p = foldMeasurements(p, s, round({ 'error-rate': { value: i / 10000 } }), at(i));
    expect(p.checks[0]!.samples).toHaveLength(60);
    expect(p.checks[0]!.samples![59]!.value).toBe(0.0069);
    expect(p.checks[0]!.measured).toBe(70);
  });

  it('needs at most the samples the window holds', () => {
    expect(requiredSamples(settings({ windowMs: 10_000, intervalMs: 5_000, minSamples: 10 }))).toBe(3);
    expect(requiredSamples(settings({ minSamples: 2 }))).toBe(2);
  });
});

describe('verificationFor', () => {
  const flow = {
    metadata: { name: 'f' },
    spec: {
      stages: [
        { environment: 'dev' },
        { environment: 'prod', verification: { checks: [errorRate], window: '2m', onFailure: 'rollbackRelease' } },
      ],
    },
  } as unknown as PromotionFlow;
  const app = (verification?: Application['spec']['verification']) =>
    ({ metadata: { name: 'a' }, spec: { verification } }) as unknown as Application;

  it("applies the stage's checks with its window and onFailure, defaults for the rest", () => {
    expect(verificationFor(flow, app(), 'prod')).toEqual({
      checks: [errorRate],
      windowMs: 120_000,
      intervalMs: 30_000,
      failureLimit: 0,
      minSamples: 3,
      onFailure: 'rollbackRelease',
    });
    expect(verificationFor(flow, app(), 'dev')).toBeUndefined();
  });

  it("adds an app's checks and never lets it replace the stage's", () => {
    const weak: VerificationCheck = { name: 'error-rate', prometheus: { query: 'vector(0)', max: 1 } };
    const v = verificationFor(flow, app({ checks: [weak, latency], environments: ['prod'] }), 'prod')!;
    expect(v.checks.map((c) => c.name)).toEqual(['error-rate', 'app/error-rate', 'latency']);
    expect(v.checks[0]).toBe(errorRate);
    expect(verificationFor(flow, app({ checks: [latency], environments: ['stable'] }), 'prod')!.checks).toEqual([
      errorRate,
    ]);
    // Checks of an app alone, in a stage without any: the defaults, onFailure stop.
    expect(verificationFor(flow, app({ checks: [latency] }), 'dev')).toMatchObject({
      onFailure: 'stop',
      windowMs: 300_000,
    });
  });
});

describe('renderTemplate', () => {
  const vars = { application: 'web', namespace: 'shop', environment: 'prod', version: 'v1.2.0', digest: 'sha256:ab' };

  it('replaces placeholders and escapes values for a PromQL string', () => {
    expect(renderTemplate('rate(x{app="{application}",version="{version}"}[1m])', vars, promqlString)).toBe(
      'rate(x{app="web",version="v1.2.0"}[1m])',
    );
    expect(promqlString('a"b\\c\'d')).toBe('a\\"b\\\\c\\\'d');
  });

  it('has no query for {previousVersion} when there is none', () => {
    expect(renderTemplate('x{version="{previousVersion}"}', vars, promqlString)).toBeUndefined();
    expect(renderTemplate('x{version="{previousVersion}"}', { ...vars, previousVersion: 'v1.1.0' }, promqlString)).toBe(
      'x{version="v1.1.0"}',
    );
  });
});
