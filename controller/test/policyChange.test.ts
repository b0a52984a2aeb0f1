import { describe, expect, it } from 'vitest';
import { changedPolicyFields, policyChangeMessage, policyDigests } from '../src/reconcile/policyChange.js';
import { env, flow } from './fixtures.js';

describe('policy changes of flows and Environments', () => {
  const strict = flow(['dev', 'stable'], {
    stages: [{ environment: 'dev' }, { environment: 'stable', approvers: { count: 2, groups: ['rm'] } }],
  });
  it('digests each governed field, independent of key order', () => {
    const d = policyDigests(strict);
    expect(Object.keys(d)).toEqual([
      'stages',
      'approval',
      'selector',
      'tagPattern',
      'signaturePolicy',
      'promotionAttestation',
    ]);
    const reordered = flow(['dev', 'stable'], {
      stages: [{ environment: 'dev' }, { approvers: { groups: ['rm'], count: 2 }, environment: 'stable' }],
    });
    expect(policyDigests(reordered)).toEqual(d);
    expect(Object.keys(policyDigests(env('stable')))).toEqual([
      'cluster',
      'namespace',
      'registry',
      'delivery',
      'freezeWindows',
      'tier',
    ]);
  });
  it('names the fields that changed since the recorded digests; nothing when none were recorded', () => {
    const before = policyDigests(strict);
    const auto = flow(['dev', 'stable'], {
      stages: [{ environment: 'dev' }, { environment: 'stable', approval: 'auto' }],
      tagPattern: '.*',
      concurrency: 9,
    });
    expect(changedPolicyFields(before, policyDigests(auto))).toEqual(['stages', 'tagPattern']);
    expect(changedPolicyFields(before, policyDigests(strict))).toEqual([]);
    expect(changedPolicyFields(undefined, policyDigests(auto))).toEqual([]);
    const moved = env('stable', { namespace: 'other-team' });
    expect(changedPolicyFields(policyDigests(env('stable')), policyDigests(moved))).toEqual(['namespace']);
  });
  it('says who changed it when the writer named themselves, and where to look when not', () => {
    const named = {
      ...strict,
      metadata: { ...strict.metadata, generation: 4, annotations: { 'promotions.kpromo.dev/changed-by': 'pat' } },
    };
    expect(policyChangeMessage(named, ['stages'])).toBe(
      'release policy of PromotionFlow ns/main changed (stages; generation 4) by pat',
    );
    expect(policyChangeMessage(strict, ['selector'])).toContain(
      'by a writer who did not set promotions.kpromo.dev/changed-by (the apiserver audit log names them',
    );
  });
});
