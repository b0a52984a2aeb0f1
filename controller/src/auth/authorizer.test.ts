import { describe, expect, it } from 'vitest';
import type { KubeRest } from '../kube/rest.js';
import { Authorizer } from './authorizer.js';
import type { Caller } from './identity.js';

/**
 * A stand-in for the SubjectAccessReview endpoint only (the unit under test is the cache in front
 * of it): allows unless the user's `extra` carries a scope, as an authorizer that honours scoped
 * tokens (OpenShift scopes, a webhook authorizer) does. Records every review it was sent.
 */
function reviews() {
  const sent: Array<{ path: string; spec: Record<string, unknown> }> = [];
  const control = {
    clusterName: 'control',
    async create(path: string, body: { spec: Record<string, unknown> }) {
      sent.push({ path, spec: body.spec });
      const extra = body.spec.extra as Record<string, string[]> | undefined;
      return { status: { allowed: !extra?.scopes?.length, reason: extra?.scopes ? 'scoped token' : '' } };
    },
  } as unknown as KubeRest;
  return { control, sent };
}

const alice = (over: Partial<Caller> = {}): Caller => ({
  username: 'alice',
  groups: ['team-a', 'system:authenticated'],
  uid: 'u-1',
  source: 'tokenreview',
  ...over,
});
const approve = { verb: 'approve', resource: 'environments', namespace: 'shop', name: 'prod' };

describe('Authorizer cache', () => {
  // Attack (issue 31): the cache key left out `extra`, so a scoped token of alice (extra.scopes)
  // was answered from the decision made for her unscoped token a moment before.
  it('keys decisions by extra too: a scoped token never reuses the unscoped decision', async () => {
    const { control, sent } = reviews();
    const a = new Authorizer(control);
    expect((await a.check(alice(), approve)).allowed).toBe(true);
    const scoped = alice({ extra: { scopes: ['user:info'] } });
    expect(await a.check(scoped, approve)).toEqual({ allowed: false, reason: 'scoped token' });
    expect(sent).toHaveLength(2);
    // The review is made as the whole identity: uid and extra are sent.
    expect(sent[1].spec).toMatchObject({ user: 'alice', uid: 'u-1', extra: { scopes: ['user:info'] } });
    // Same identity again: from the cache, whatever the order of extra's keys.
    const reordered = alice({ extra: { b: ['2'], a: ['1'] } });
    await a.check(alice({ extra: { a: ['1'], b: ['2'] } }), approve);
    await a.check(reordered, approve);
    expect(sent).toHaveLength(3);
  });

  it('keys decisions by uid: another account of the same name is reviewed again', async () => {
    const { control, sent } = reviews();
    const a = new Authorizer(control);
    await a.check(alice(), approve);
    await a.check(alice({ uid: 'u-2' }), approve);
    await a.check(alice(), approve);
    expect(sent.map((s) => s.spec.uid)).toEqual(['u-1', 'u-2']);
  });
});
