import type { PromotionPlan } from '@kpromo/api';
import type { Review } from '@kpromo/forge';
import { describe, expect, it } from 'vitest';
import { evaluateApprovals } from '../policy/approvalPolicy.js';
import { pullRequestBody } from './pullRequestBody.js';
import {
  combineApprovals,
  judgeReviews,
  kpromoMerges,
  pullRequestApprovals,
  pullRequestChanged,
  pullRequestStatuses,
} from './pullRequestDecisions.js';

const C = 'c'.repeat(40);
const OTHER = 'd'.repeat(40);
const user = (login: string) => `gitea:${login}`;
const review = (u: string, state: Review['state'], commit = C, extra: Partial<Review> = {}): Review => ({
  id: Math.floor(Math.random() * 1e6),
  user: u,
  state,
  commit,
  ...extra,
});
const judge = (reviews: Review[], o: { head?: string; merged?: { by: string; commit: string } } = {}) =>
  judgeReviews(reviews, {
    commit: C,
    head: o.head ?? C,
    self: 'kpromo-bot',
    user,
    ...(o.merged ? { merged: o.merged } : {}),
  });

describe('judgeReviews: which reviews of a pull request are offered to the approval policy', () => {
  it.each([
    ['an approval of kpromo’s commit', [review('rm', 'APPROVED')], { rm: true }],
    ['an approval of an earlier commit (pushed after the review)', [review('rm', 'APPROVED', OTHER)], { rm: false }],
    ['an approval the forge marked stale', [review('rm', 'APPROVED', C, { stale: true })], { rm: false }],
    [
      'a change request after an approval takes it back',
      [review('rm', 'APPROVED'), review('rm', 'CHANGES_REQUESTED')],
      { rm: false },
    ],
    [
      'a comment after an approval does not take it back',
      [review('rm', 'APPROVED'), review('rm', 'COMMENTED')],
      { rm: true },
    ],
    ['kpromo’s own approval', [review('kpromo-bot', 'APPROVED')], { 'kpromo-bot': false }],
    ['a dismissed review', [review('rm', 'APPROVED'), review('rm', 'DISMISSED')], { rm: false }],
  ] as const)('%s', (_t, reviews, want) => {
    const got = Object.fromEntries(judge([...reviews]).map((r) => [r.login, r.eligible]));
    expect(got).toEqual(want);
  });

  it('offers nothing while the head is not kpromo’s commit (someone pushed to the branch), naming both commits', () => {
    const [r] = judge([review('rm', 'APPROVED')], { head: OTHER });
    expect(r.eligible).toBe(false);
    expect(r.why).toContain(OTHER.slice(0, 12));
    expect(r.why).toContain(C.slice(0, 12));
  });

  it('lists the merge as an entry of its own; kpromo’s own merge is not offered', () => {
    expect(judge([], { merged: { by: 'rm', commit: 'm1' } })).toEqual([
      expect.objectContaining({ login: 'rm', user: 'gitea:rm', merger: true, eligible: true }),
    ]);
    expect(judge([], { merged: { by: 'kpromo-bot', commit: 'm1' } })[0].eligible).toBe(false);
  });

  it('maps each login to a Kubernetes user, and offers each user once as an approval', () => {
    const judged = judge([review('rm', 'APPROVED')], { merged: { by: 'rm', commit: 'm1' } });
    expect(
      pullRequestApprovals({ forge: 'gitea', repository: 'o/r', branch: 'b', base: 'main', reviews: judged }),
    ).toEqual([{ user: 'gitea:rm', comment: 'approved the pull request' }]);
  });
});

describe('pullRequestChanged: when a pull request is no longer kpromo’s proposal', () => {
  it.each([
    ['unchanged', { commit: C, head: C, base: 'main', wantBase: 'main' }, undefined],
    ['a commit pushed to its branch', { commit: C, head: OTHER, base: 'main', wantBase: 'main' }, 'someone pushed'],
    ['retargeted to another base', { commit: C, head: C, base: 'hotfix', wantBase: 'main' }, 'retargeted to hotfix'],
  ] as const)('%s', (_t, o, want) => {
    const got = pullRequestChanged(o);
    if (want === undefined) expect(got).toBeUndefined();
    else expect(got).toContain(want);
  });
});

describe('the stage verdict by approvalSource', () => {
  const verdict = (approvals: string[], requestedBy = 'gitea:dev') =>
    evaluateApprovals({ mode: 'manual', approvals: approvals.map((u) => ({ user: u })), requestedBy });
  const yes = verdict(['gitea:rm']);
  const no = verdict([]);

  it.each([
    ['kpromo', yes, no, true],
    ['kpromo', no, yes, false],
    ['pullRequest', no, yes, true],
    ['pullRequest', yes, no, false],
    ['both', yes, yes, true],
    ['both', yes, no, false],
    ['both', no, yes, false],
  ] as const)('%s: kpromo approved %s, pull request approved %s', (source, inKpromo, onPr, approved) => {
    expect(combineApprovals(source, inKpromo, onPr).approved).toBe(approved);
  });

  it('the requester reviewing and merging their own plan does not count (self-approval judged by kpromo)', () => {
    const judged = judge([review('dev', 'APPROVED')], { merged: { by: 'dev', commit: 'm1' } });
    const approvals = pullRequestApprovals({
      forge: 'gitea',
      repository: 'o/r',
      branch: 'b',
      base: 'main',
      reviews: judged,
    });
    // As planGate judges the pull request's approvals: forbidSelfApproval always on.
    const v = evaluateApprovals({
      mode: 'manual',
      approvers: { forbidSelfApproval: true },
      approvals,
      requestedBy: 'gitea:dev',
    });
    expect(v.approved).toBe(false);
    expect(v.approvers[0]).toMatchObject({ user: 'gitea:dev', counted: false });
  });

  it('kpromo merges unless the stage’s approvals are the forge’s on a manual stage', () => {
    expect(kpromoMerges('kpromo', { required: 1 })).toBe(true);
    expect(kpromoMerges('both', { required: 2 })).toBe(true);
    expect(kpromoMerges('pullRequest', { required: 1 })).toBe(false);
    expect(kpromoMerges('pullRequest', { required: 0 })).toBe(true);
  });
});

describe('pullRequestStatuses', () => {
  it('reports approval, gates and signatures for branch protection, descriptions within 140 characters', () => {
    const s = pullRequestStatuses(
      { approved: false, required: 1, waitingFor: 'x'.repeat(300) },
      { reason: 'Frozen', message: 'prod is frozen' },
      [
        { application: 'api', verdict: 'Unsigned', mode: 'Enforce' },
        { application: 'web', verdict: 'Unsigned', mode: 'Audit' },
      ],
    );
    expect(s.map((x) => [x.context, x.state])).toEqual([
      ['kpromo/approval', 'pending'],
      ['kpromo/gates', 'pending'],
      ['kpromo/signatures', 'failure'],
      ['kpromo/verification', 'success'],
    ]);
    expect(Math.max(...s.map((x) => x.description.length))).toBeLessThanOrEqual(140);
    expect(s[2].description).toContain('api Unsigned');
    expect(s[2].description).not.toContain('web');
  });
});

describe('kpromo/verification: the source stage’s verification of what the pull request brings', () => {
  const status = (v?: Array<{ application: string; verdict?: string }>) =>
    pullRequestStatuses(undefined, undefined, [], undefined, v).find((x) => x.context === 'kpromo/verification')!;
  it.each([
    ['all passed', [{ application: 'api', verdict: 'Passed' }], 'success', 'passed in the source stage'],
    [
      'one failed',
      [
        { application: 'api', verdict: 'Passed' },
        { application: 'web', verdict: 'Failed' },
      ],
      'failure',
      'web Failed',
    ],
    ['none verified (no checks there)', [{ application: 'api' }], 'success', 'verified none'],
    [
      'some not verified',
      [{ application: 'api', verdict: 'Passed' }, { application: 'web' }],
      'success',
      'not verified there: web',
    ],
    ['a rollback', undefined, 'success', 'rollback'],
  ] as const)('%s', (_t, v, state, text) => {
    const s = status(v ? [...v] : undefined);
    expect(s.state).toBe(state);
    expect(s.description).toContain(text);
  });
});

describe('pullRequestBody', () => {
  const plan = {
    metadata: { namespace: 'shop', name: 'p-1' },
    spec: { flow: 'shop', from: 'staging', to: 'prod', requestedBy: 'dev', candidates: [] },
  } as unknown as PromotionPlan;

  it('carries each app’s version, digest, signature verdict and the source stage’s verification values', () => {
    const body = pullRequestBody({
      plan,
      source: 'pullRequest',
      apps: [
        {
          application: 'api',
          tag: 'v1.2.0',
          digest: `sha256:${'a'.repeat(64)}`,
          signature: { verdict: 'Verified', message: 'signed by release key' },
          sourceVerification: {
            verdict: 'Passed',
            startedAt: '2026-01-01T00:00:00Z',
            endsAt: '2026-01-01T00:05:00Z',
            finishedAt: '2026-01-01T00:05:00Z',
            checks: [
              {
                name: 'error-rate',
                kind: 'prometheus',
                condition: '≤ 0.01',
                verdict: 'Passed',
                samples: [{ at: '2026-01-01T00:04:00Z', value: 0.002, ok: true }],
              },
            ],
          },
        },
      ],
      gate: { approved: false, required: 1, waitingFor: '1 approval' },
    });
    expect(body).toContain('| api | v1.2.0 |');
    expect(body).toContain(`sha256:${'a'.repeat(64)}`);
    expect(body).toContain('Verified: signed by release key');
    expect(body).toContain('error-rate (≤ 0.01): 0.002 Passed');
    expect(body).toContain('Required: 1 approval(s); waiting for 1 approval');
    expect(body).toContain('requested by `dev`');
  });

  it('escapes values from CRs so they cannot break the table or render links', () => {
    const body = pullRequestBody({
      plan,
      source: 'kpromo',
      apps: [{ application: 'api', tag: 'v1|[click](https://evil.example)\n| x |' }],
    });
    expect(body).not.toContain('[click](https://evil.example)');
    expect(body.split('\n').filter((l) => l.startsWith('| api')).length).toBe(1);
  });
});
