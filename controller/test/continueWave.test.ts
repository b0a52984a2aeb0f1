// checkContinue and continuePlan: who may let the next wave of a fleet plan start, which wave, and
// the continuation appended (always naming the authenticated caller), over a small fake ApiContext.
import type { PromotionPlan, WaveContinuation, WaveProgress } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { Access } from '../src/api/access.js';
import type { ApiContext } from '../src/api/context.js';
import { checkContinue, continuePlan } from '../src/api/continueWave.js';
import { stalePlanMessage } from '../src/api/promotions.js';
import type { AccessRequest, UrlAccessRequest } from '../src/auth/authorizer.js';
import type { Caller } from '../src/auth/identity.js';
import { MemoryCache } from '../src/kube/memoryCache.js';
import { KubeError } from '../src/kube/rest.js';

const alice: Caller = { username: 'alice', groups: ['release-managers'], source: 'static' };
const UID = '6f1c2a44-3b8e-4c1d-9e7a-0d5b2c8f4a11';
const PATH = '/apis/promotions.kpromo.dev/v1alpha1/namespaces/shop/promotionplans/rollout';

const wave = (name: string, phase: WaveProgress['phase'], over: Partial<WaveProgress> = {}): WaveProgress => ({
  name,
  clusters: [`${name}-1`, `${name}-2`],
  phase,
  ...over,
});

/** A fleet plan into prod: canary (pauses) then the rest, as the controller journals them. */
function fleetPlan(waves: WaveProgress[] | undefined, continuations?: WaveContinuation[]): PromotionPlan {
  return {
    apiVersion: 'promotions.kpromo.dev/v1alpha1',
    kind: 'PromotionPlan',
    metadata: { name: 'rollout', namespace: 'shop', uid: UID },
    spec: {
      flow: 'shop',
      from: 'stable',
      to: 'prod',
      candidates: [{ application: 'cart', from: { tag: 'v1.2.0', digest: `sha256:${'a'.repeat(64)}` } }],
      requestedBy: 'alice',
      ...(continuations ? { continuations } : {}),
    },
    status: { phase: 'Promoting', ...(waves ? { waves } : {}) },
  };
}

const waiting = () =>
  fleetPlan([
    wave('canary', 'Succeeded', { pause: true, message: '2 of 2 cluster(s) promoted' }),
    wave('rest', 'Waiting', { message: 'waiting for someone with the RBAC verb continue' }),
  ]);

/**
 * A fake ApiContext: RBAC grants `allowed` ("verb resource[/name]") and records every check; the
 * control client serves `plan` and applies JSON patches (test, add) to it, or throws `patchErrors`
 * one by one first (each may change the stored plan, as a concurrent writer would).
 */
function fakeApi(
  plan: PromotionPlan,
  o: { allowed?: string[]; patchErrors?: Array<{ error: Error; meanwhile?: (p: PromotionPlan) => void }> } = {},
) {
  const allowed = new Set(
    o.allowed ?? ['get promotionplans/rollout', 'patch promotionplans/rollout', 'continue environments/prod'],
  );
  const checks: string[] = [];
  const patches: unknown[][] = [];
  let stored = structuredClone(plan);
  const errors = [...(o.patchErrors ?? [])];
  const key = (r: AccessRequest) => `${r.verb} ${r.resource}${r.name ? `/${r.name}` : ''}`;
  const access = new Access({
    check: async (_c: Caller, r: AccessRequest | UrlAccessRequest) => {
      const k = key(r as AccessRequest);
      checks.push(k);
      return { allowed: allowed.has(k), reason: 'test' };
    },
  });
  const control = {
    getOrUndefined: async (path: string) => (path === PATH ? structuredClone(stored) : undefined),
    jsonPatch: async (path: string, ops: Array<{ op: string; path: string; value: unknown }>) => {
      expect(path).toBe(PATH);
      patches.push(ops);
      const next = errors.shift();
      if (next) {
        next.meanwhile?.(stored);
        throw next.error;
      }
      const spec = stored.spec as unknown as Record<string, unknown>;
      for (const op of ops) {
        if (op.op === 'test' && JSON.stringify(spec.continuations) !== JSON.stringify(op.value))
          throw new KubeError(422, 'Invalid', 'PATCH', path, 'fake', 'testing value /spec/continuations failed');
        if (op.op === 'add' && op.path === '/spec/continuations') spec.continuations = op.value;
        if (op.op === 'add' && op.path === '/spec/continuations/-')
          spec.continuations = [...((spec.continuations as unknown[]) ?? []), op.value];
      }
      stored = { ...stored, metadata: { ...stored.metadata, generation: 2 } };
      return structuredClone(stored);
    },
  };
  const ctx: ApiContext = { cache: new MemoryCache(), control: control as never, access, namespace: 'shop' };
  return { ctx, checks, patches, stored: () => stored };
}

const refusal = async (p: Promise<unknown>) => {
  const e = (await p.then(
    () => undefined,
    (x: unknown) => x,
  )) as { status?: number; message?: string } | undefined;
  expect(e, 'expected a refusal').toBeDefined();
  return { status: e?.status, message: e?.message };
};

describe('checkContinue', () => {
  it('picks the wave that is Waiting, after asking RBAC for continue (environments/<to>) and patch on the plan', async () => {
    const { ctx, checks } = fakeApi(waiting());
    const w = await checkContinue(ctx, alice, waiting());
    expect(w.name).toBe('rest');
    // Namespace-wide first (continue on promotionplans), then the target environment, as admission.
    expect(checks).toEqual(['continue promotionplans', 'continue environments/prod', 'patch promotionplans/rollout']);
  });

  it('the verb continue granted namespace-wide on promotionplans is enough', async () => {
    const { ctx } = fakeApi(waiting(), { allowed: ['continue promotionplans', 'patch promotionplans/rollout'] });
    expect((await checkContinue(ctx, alice, waiting())).name).toBe('rest');
  });

  it('without the verb continue: 403 naming the verb and where to grant it', async () => {
    const { ctx } = fakeApi(waiting(), { allowed: ['patch promotionplans/rollout', 'approve environments/prod'] });
    expect(await refusal(checkContinue(ctx, alice, waiting()))).toEqual({
      status: 403,
      message:
        'forbidden: alice may not continue plans into environment prod in namespace shop (Kubernetes RBAC: needs verb continue on environments/prod or on promotionplans)',
    });
  });

  it('without patch on the plan: 403', async () => {
    const { ctx } = fakeApi(waiting(), { allowed: ['continue environments/prod'] });
    expect(await refusal(checkContinue(ctx, alice, waiting()))).toMatchObject({
      status: 403,
      message: expect.stringContaining('may not patch promotionplans rollout in namespace shop'),
    });
  });

  it('a plan recreated since the caller reviewed it: 409 before anything else is asked', async () => {
    const { ctx, checks } = fakeApi(waiting());
    const other = 'aaaaaaaa-0000-0000-0000-000000000000';
    expect(await refusal(checkContinue(ctx, alice, waiting(), { uid: other }))).toEqual({
      status: 409,
      message: stalePlanMessage('PromotionPlan shop/rollout', other, UID, 'continuing'),
    });
    expect(stalePlanMessage('PromotionPlan shop/rollout', other, UID, 'continuing')).toMatch(
      /review it again before continuing$/,
    );
    expect(checks).toEqual([]);
    expect((await checkContinue(ctx, alice, waiting(), { uid: UID })).name).toBe('rest');
  });

  it('a plan without waves (not a fleet plan, or not started): 400', async () => {
    const { ctx } = fakeApi(fleetPlan(undefined));
    expect(await refusal(checkContinue(ctx, alice, fleetPlan(undefined)))).toEqual({
      status: 400,
      message:
        'PromotionPlan shop/rollout has no waves (status.waves) to continue: only a plan into a fleet Environment (spec.clusters) runs in waves, once it has started (phase Promoting)',
    });
  });

  it('a wave the plan does not have: 400 listing its waves', async () => {
    const { ctx } = fakeApi(waiting());
    expect(await refusal(checkContinue(ctx, alice, waiting(), { wave: 'eu' }))).toEqual({
      status: 400,
      message: 'PromotionPlan shop/rollout has no wave "eu" (its waves: canary, rest)',
    });
  });

  it('no wave Waiting: 409 saying what the waves do, and which later wave could be continued ahead', async () => {
    const p = fleetPlan([wave('canary', 'Promoting', { pause: true, message: 'promoting' }), wave('rest', 'Pending')]);
    const { ctx } = fakeApi(p);
    expect(await refusal(checkContinue(ctx, alice, p))).toEqual({
      status: 409,
      message:
        'no wave of PromotionPlan shop/rollout is Waiting for a continuation: wave canary is Promoting (promoting); to let wave rest start after the pause before it, name it (wave rest)',
    });
    const done = fleetPlan([wave('canary', 'Succeeded'), wave('rest', 'Succeeded', { message: 'all promoted' })]);
    expect((await refusal(checkContinue(fakeApi(done).ctx, alice, done))).message).toBe(
      'no wave of PromotionPlan shop/rollout is Waiting for a continuation: wave rest is Succeeded (all promoted)',
    );
  });

  it('a named wave Pending after a wave with pause may be continued ahead; one that does not wait may not', async () => {
    const p = fleetPlan([
      wave('canary', 'Promoting', { pause: true }),
      wave('eu', 'Pending'),
      wave('us', 'Pending', { pause: true }),
    ]);
    const { ctx } = fakeApi(p);
    expect((await checkContinue(ctx, alice, p, { wave: 'eu' })).name).toBe('eu');
    expect(await refusal(checkContinue(ctx, alice, p, { wave: 'us' }))).toEqual({
      status: 409,
      message:
        'wave us of PromotionPlan shop/rollout does not wait for a continuation: the wave before it (eu) does not pause, so it starts by itself',
    });
    expect(await refusal(checkContinue(ctx, alice, p, { wave: 'canary' }))).toEqual({
      status: 409,
      message:
        'wave canary is Promoting in PromotionPlan shop/rollout: only a wave that waits after a pause (Waiting, or Pending after a wave with pause) can be continued',
    });
    const first = fleetPlan([wave('canary', 'Pending', { pause: true }), wave('rest', 'Pending')]);
    expect((await refusal(checkContinue(fakeApi(first).ctx, alice, first, { wave: 'canary' }))).message).toBe(
      'wave canary of PromotionPlan shop/rollout does not wait for a continuation: it is the first wave and starts with the plan',
    );
  });

  it('a named wave after a failed one: 409 (it will not start)', async () => {
    const p = fleetPlan([wave('canary', 'Failed', { pause: true }), wave('rest', 'Pending')]);
    expect(await refusal(checkContinue(fakeApi(p).ctx, alice, p, { wave: 'rest' }))).toEqual({
      status: 409,
      message: 'wave canary of PromotionPlan shop/rollout failed: wave rest will not start',
    });
    const halted = fleetPlan([
      wave('canary', 'Failed', { pause: true }),
      wave('rest', 'Halted', { message: 'not started: wave canary failed' }),
    ]);
    expect((await refusal(checkContinue(fakeApi(halted).ctx, alice, halted, { wave: 'rest' }))).status).toBe(409);
  });

  it('a wave already continued: 409 naming who continued it', async () => {
    const p = fleetPlan(
      [wave('canary', 'Succeeded', { pause: true }), wave('rest', 'Waiting')],
      [{ wave: 'rest', user: 'bob', planUID: UID }],
    );
    const { ctx } = fakeApi(p);
    expect(await refusal(checkContinue(ctx, alice, p))).toEqual({
      status: 409,
      message: 'wave rest of PromotionPlan shop/rollout is already continued by bob',
    });
    expect(await refusal(checkContinue(ctx, alice, p, { wave: 'rest' }))).toEqual({
      status: 409,
      message: 'wave rest of PromotionPlan shop/rollout is already continued by bob',
    });
    const started = fleetPlan(
      [wave('canary', 'Succeeded', { pause: true }), wave('rest', 'Promoting', { continuedBy: 'alice' })],
      [{ wave: 'rest', user: 'alice' }],
    );
    const viaPortal: Caller = { ...alice, via: { username: 'backstage', groups: [], source: 'static' } };
    expect((await refusal(checkContinue(fakeApi(started).ctx, viaPortal, started, { wave: 'rest' }))).message).toBe(
      'wave rest of PromotionPlan shop/rollout is already continued by alice (via backstage)',
    );
  });
});

describe('continuePlan', () => {
  it('appends a continuation naming the caller, the uid read and the comment', async () => {
    const { ctx, patches, stored } = fakeApi(waiting());
    const out = await continuePlan(ctx, alice, 'shop', 'rollout', { comment: 'canary looks good' });
    const entry = { wave: 'rest', user: 'alice', planUID: UID, comment: 'canary looks good' };
    expect(patches).toEqual([[{ op: 'add', path: '/spec/continuations', value: [entry] }]]);
    expect(out.spec.continuations).toEqual([entry]);
    expect(stored().spec.continuations).toEqual([entry]);
  });

  it('appends after the continuations there are, guarded by a test of them', async () => {
    const earlier = { wave: 'eu', user: 'bob', planUID: UID };
    const p = fleetPlan(
      [
        wave('canary', 'Succeeded', { pause: true }),
        wave('eu', 'Succeeded', { pause: true, continuedBy: 'bob' }),
        wave('us', 'Waiting'),
      ],
      [earlier],
    );
    const { ctx, patches } = fakeApi(p);
    const out = await continuePlan(ctx, alice, 'shop', 'rollout', { wave: 'us', uid: UID });
    expect(patches).toEqual([
      [
        { op: 'test', path: '/spec/continuations', value: [earlier] },
        { op: 'add', path: '/spec/continuations/-', value: { wave: 'us', user: 'alice', planUID: UID } },
      ],
    ]);
    expect(out.spec.continuations?.map((c) => `${c.wave} ${c.user}`)).toEqual(['eu bob', 'us alice']);
  });

  it('raced by another continuation of the same wave: re-reads, then 409 naming who won', async () => {
    const { ctx, patches } = fakeApi(waiting(), {
      patchErrors: [
        {
          // The schema's append-only rule refuses our add over bob's fresh list.
          error: new KubeError(422, 'Invalid', 'PATCH', PATH, 'fake', 'continuations can only be appended'),
          meanwhile: (p) => {
            p.spec.continuations = [{ wave: 'rest', user: 'bob', planUID: UID }];
          },
        },
      ],
    });
    expect(await refusal(continuePlan(ctx, alice, 'shop', 'rollout'))).toEqual({
      status: 409,
      message: 'wave rest of PromotionPlan shop/rollout is already continued by bob',
    });
    expect(patches).toHaveLength(1);
  });

  it("admission's refusal of the planUID (the plan was replaced meanwhile): 409 stale", async () => {
    const { ctx } = fakeApi(waiting(), {
      patchErrors: [
        {
          error: new KubeError(
            403,
            'Forbidden',
            'PATCH',
            PATH,
            'fake',
            `a continuation must name the plan it continues: set planUID to 0000`,
          ),
        },
      ],
    });
    expect(await refusal(continuePlan(ctx, alice, 'shop', 'rollout'))).toEqual({
      status: 409,
      message: stalePlanMessage('PromotionPlan shop/rollout', UID, undefined, 'continuing'),
    });
  });

  it('a plan the caller may not read is a 404, as one that does not exist', async () => {
    const { ctx, patches } = fakeApi(waiting(), { allowed: ['continue environments/prod'] });
    expect(await refusal(continuePlan(ctx, alice, 'shop', 'rollout'))).toEqual({
      status: 404,
      message: 'PromotionPlan shop/rollout not found',
    });
    expect(patches).toEqual([]);
  });
});
