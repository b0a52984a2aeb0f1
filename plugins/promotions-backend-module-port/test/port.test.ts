import { createHmac } from 'node:crypto';
import type { PromotionPlan } from '@kpromo/api';
import { planProgress } from '@kpromo/plugin-promotions-common';
import { describe, expect, it } from 'vitest';
import { shownDigests, verifyPortSignature } from '../src/port.js';

const SECRET = 'port-client-secret';
const body = Buffer.from(JSON.stringify({ runId: 'r1', action: 'kpromo_promote', inputs: {} }));
const sign = (ts: string, b: Buffer = body, secret = SECRET) =>
  `v1,${createHmac('sha256', secret)
    .update(`${ts}.${b.toString('utf8')}`)
    .digest('base64')}`;
const opts = (now: number) => ({ secret: SECRET, maxAgeSeconds: 300, now });

describe('verifyPortSignature', () => {
  const now = Date.parse('2026-12-02T12:00:00Z');
  const ts = String(now - 1000);

  it('accepts a fresh signature over "<timestamp>.<body>" (ms or s timestamps)', () => {
    expect(() => verifyPortSignature(opts(now), { signature: sign(ts), timestamp: ts }, body)).not.toThrow();
    const secs = String(Math.floor(now / 1000) - 10);
    expect(() => verifyPortSignature(opts(now), { signature: sign(secs), timestamp: secs }, body)).not.toThrow();
    // Several space-separated signatures (key rotation): one valid one is enough.
    expect(() =>
      verifyPortSignature(opts(now), { signature: `v1,AAAA ${sign(ts)}`, timestamp: ts }, body),
    ).not.toThrow();
  });

  it('rejects missing headers, another key, a changed body or timestamp, and stale or future timestamps', () => {
    const check =
      (h: { signature?: string; timestamp?: string }, b = body) =>
      () =>
        verifyPortSignature(opts(now), h, b);
    expect(check({ timestamp: ts })).toThrow(/missing/);
    expect(check({ signature: sign(ts) })).toThrow(/missing/);
    expect(check({ signature: sign(ts, body, 'other'), timestamp: ts })).toThrow(/invalid x-port-signature/);
    expect(check({ signature: sign(ts), timestamp: ts }, Buffer.from(`${body.toString()} `))).toThrow(
      /invalid x-port-signature/,
    );
    const other = String(now - 2000);
    expect(check({ signature: sign(ts), timestamp: other })).toThrow(/invalid x-port-signature/);
    const stale = String(now - 301_000);
    expect(check({ signature: sign(stale), timestamp: stale })).toThrow(/stale/);
    const future = String(now + 301_000);
    expect(check({ signature: sign(future), timestamp: future })).toThrow(/stale/);
    expect(check({ signature: 'v2,abc', timestamp: ts })).toThrow(/invalid x-port-signature/);
    expect(check({ signature: sign(ts), timestamp: 'yesterday' })).toThrow(/invalid x-port-timestamp/);
  });
});

describe('planProgress', () => {
  const base: PromotionPlan = {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { name: 'p', namespace: 'ns' },
    spec: {
      flow: 'main',
      from: 'dev',
      to: 'stable',
      requestedBy: 'user:default/bob',
      approvals: [
        { user: 'user:default/alice', groups: ['group:default/team-a'] },
        {
          user: 'port:carol@example.com',
          overrideFreeze: true,
          overrideReason: 'payments down, hotfix v1.1.1',
          comment: 'hotfix',
        },
      ],
      candidates: [
        { application: 'a', from: { tag: 'v1', digest: 'sha256:1' } },
        { application: 'b', from: { tag: 'v2', digest: 'sha256:2' } },
      ],
    },
    status: {
      phase: 'Promoting',
      apps: [{ application: 'a', phase: 'RollingOut', written: true }],
      gate: {
        approved: true,
        required: 1,
        approvers: [
          { user: 'user:default/alice', counted: true, observedAt: '2026-12-02T10:00:00Z' },
          { user: 'port:carol@example.com', counted: false, overrideFreeze: true },
        ],
        frozen: {
          window: 'friday',
          reason: 'weekend',
          until: '2026-12-05T00:00:00Z',
          overriddenBy: 'port:carol@example.com',
        },
        eligibleAt: '2026-12-02T09:00:00Z',
      },
      soakResets: [
        {
          at: '2026-12-02T08:00:00Z',
          environment: 'dev',
          alert: 'WebErrors',
          fingerprint: 'f1',
          reason: 'alert WebErrors',
        },
      ],
    },
  };

  it('lists every candidate, waiting ones included, and marks terminal phases done', () => {
    const p = planProgress(base);
    expect(p).toMatchObject({ phase: 'Promoting', done: false, total: 2 });
    expect(p.apps).toEqual([
      { application: 'a', phase: 'RollingOut', written: true },
      { application: 'b', phase: 'Waiting' },
    ]);
    expect(planProgress({ ...base, status: { phase: 'RolledBack' } }).done).toBe(true);
    expect(planProgress({ ...base, status: undefined }).phase).toBe('Pending');
  });

  it('says what the gate says: approved, approvers with observedAt, freeze, soak and its restarts, requestedBy', () => {
    const p = planProgress(base);
    expect(p.approved).toBe(true);
    expect(p.requestedBy).toBe('user:default/bob');
    expect(p.approvers).toEqual([
      {
        user: 'user:default/alice',
        groups: ['group:default/team-a'],
        observedAt: '2026-12-02T10:00:00Z',
        counted: true,
      },
      {
        user: 'port:carol@example.com',
        overrideFreeze: true,
        overrideReason: 'payments down, hotfix v1.1.1',
        comment: 'hotfix',
        counted: false,
      },
    ]);
    expect(p.frozen).toEqual({
      window: 'friday',
      reason: 'weekend',
      until: '2026-12-05T00:00:00Z',
      overriddenBy: 'port:carol@example.com',
    });
    expect(p.eligibleAt).toBe('2026-12-02T09:00:00Z');
    expect(p.soakResets).toEqual([
      {
        at: '2026-12-02T08:00:00Z',
        environment: 'dev',
        alert: 'WebErrors',
        fingerprint: 'f1',
        reason: 'alert WebErrors',
      },
    ]);
    expect(p.waitingFor).toBeUndefined();
  });

  it('is not approved without a gate (the controller has not looked yet), whatever spec.approvals says', () => {
    const p = planProgress({ ...base, status: { phase: 'Pending' } });
    expect(p.approved).toBe(false);
    // The approvals are listed, without observedAt: the controller has not seen them yet.
    expect(p.approvers.map((a) => [a.user, a.observedAt])).toEqual([
      ['user:default/alice', undefined],
      ['port:carol@example.com', undefined],
    ]);
    const waiting = planProgress({
      ...base,
      spec: { ...base.spec, approvals: undefined },
      status: { phase: 'Pending', gate: { approved: false, required: 2, waitingFor: '2 more approvals' } },
    });
    expect(waiting).toMatchObject({ approved: false, approvers: [], waitingFor: '2 more approvals' });
  });
});

describe('shownDigests (a promote run previews unless it names the digests reviewed)', () => {
  const shown = { cart: `sha256:${'2'.repeat(64)}` };
  it.each([
    ['absent', undefined, undefined],
    ['null (an empty Port object input)', null, undefined],
    ['an empty string', '  ', undefined],
    ['an empty object', {}, undefined],
    ['the JSON text of an empty object', '{}', undefined],
    ['the object the preview printed', shown, shown],
    ['its JSON text (a Port text input)', JSON.stringify(shown), shown],
    ['anything else, for the contract to refuse', ['cart'], ['cart']],
  ])('%s: %j', (_what, input, out) => {
    expect(shownDigests(input)).toEqual(out);
  });
  it('refuses text that is not JSON, saying what to send', () => {
    expect(() => shownDigests('cart=sha256:2')).toThrow(
      'inputs.expect is not JSON: send the object the preview run printed, {"<application>": "sha256:..."}',
    );
  });
});
