import type { PromotionPlan, WaveContinuation, WaveProgress } from '@kpromo/api';
import type { Caller } from '../auth/identity.js';
import { KPROMO_TYPES, resourcePath } from '../kube/paths.js';
import { isConflict, KubeError } from '../kube/rest.js';
import { who } from './access.js';
import { refuseAgent } from './agents.js';
import { kubeWriteError } from './apiError.js';
import { type ApiContext, ApiError } from './context.js';
import { getPlan, stalePlanMessage } from './promotions.js';

export interface ContinueOptions {
  /** The wave to let start (status.waves[].name); default: the wave that is Waiting. */
  wave?: string;
  comment?: string;
  /**
   * metadata.uid of the plan the caller was shown: a plan of that name with another uid (deleted and
   * created again since) is a 409, never continued in their name.
   */
  uid?: string;
}

const describeWave = (w: WaveProgress) => `wave ${w.name} is ${w.phase}${w.message ? ` (${w.message})` : ''}`;

const continuedBy = (c: WaveContinuation, caller: Caller) => (c.user === caller.username ? who(caller) : c.user);

/**
 * Everything {@link continuePlan} checks on the plan as read, as the caller, before it writes: the
 * uid the caller reviewed, the RBAC verb continue for the target environment, `patch` on the plan,
 * that the plan is a fleet plan with the wave named, and that the wave waits for a continuation
 * (Waiting, or Pending after a wave with pause) nobody gave yet. Returns the wave to let start. A
 * door that asks a person to confirm (MCP) asks this first, so nobody confirms what would be refused.
 */
export async function checkContinue(
  ctx: ApiContext,
  caller: Caller,
  p: PromotionPlan,
  opts: ContinueOptions = {},
): Promise<WaveProgress> {
  const namespace = p.metadata.namespace ?? '';
  const name = p.metadata.name;
  const ref = `PromotionPlan ${namespace}/${name}`;
  if (opts.uid && opts.uid !== p.metadata.uid)
    throw new ApiError(409, stalePlanMessage(ref, opts.uid, p.metadata.uid, 'continuing'));
  refuseAgent(caller, `continue the waves of ${ref}`, 'letting a paused wave go on is a person’s decision');
  await ctx.access.requireRelease(caller, 'continue', namespace, p.spec.to);
  // kubectl needs patch on the plan to add a continuation; so does every other door.
  await ctx.access.require(caller, { verb: 'patch', resource: 'promotionplans', namespace, name });

  const waves = p.status?.waves ?? [];
  if (!waves.length)
    throw new ApiError(
      400,
      `${ref} has no waves (status.waves) to continue: only a plan into a fleet Environment (spec.clusters) runs in waves, once it has started (phase ${p.status?.phase ?? 'Pending'})`,
    );
  const continuations = p.spec.continuations ?? [];
  const given = (w: WaveProgress) => continuations.find((c) => c.wave === w.name);

  if (opts.wave === undefined) {
    const w = waves.find((x) => x.phase === 'Waiting');
    if (!w) {
      const current = waves.find((x) => x.phase !== 'Succeeded') ?? waves[waves.length - 1];
      // A wave after a pause whose turn has not come yet may be continued ahead, by name.
      const ahead = waves.some((x) => x.phase === 'Failed')
        ? undefined
        : waves.find((x, j) => x.phase === 'Pending' && waves[j - 1]?.pause && !given(x));
      throw new ApiError(
        409,
        `no wave of ${ref} is Waiting for a continuation: ${describeWave(current)}${
          ahead ? `; to let wave ${ahead.name} start after the pause before it, name it (wave ${ahead.name})` : ''
        }`,
      );
    }
    const c = given(w);
    if (c) throw new ApiError(409, `wave ${w.name} of ${ref} is already continued by ${continuedBy(c, caller)}`);
    return w;
  }

  const i = waves.findIndex((x) => x.name === opts.wave);
  if (i < 0)
    throw new ApiError(400, `${ref} has no wave "${opts.wave}" (its waves: ${waves.map((x) => x.name).join(', ')})`);
  const w = waves[i];
  const c = given(w);
  if (c) throw new ApiError(409, `wave ${w.name} of ${ref} is already continued by ${continuedBy(c, caller)}`);
  if (w.phase === 'Waiting') return w;
  if (w.phase === 'Pending') {
    const failed = waves.find((x) => x.phase === 'Failed');
    if (failed) throw new ApiError(409, `wave ${failed.name} of ${ref} failed: wave ${w.name} will not start`);
    const before = waves[i - 1];
    if (before?.pause) return w;
    throw new ApiError(
      409,
      before
        ? `wave ${w.name} of ${ref} does not wait for a continuation: the wave before it (${before.name}) does not pause, so it starts by itself`
        : `wave ${w.name} of ${ref} does not wait for a continuation: it is the first wave and starts with the plan`,
    );
  }
  throw new ApiError(
    409,
    `${describeWave(w)} in ${ref}: only a wave that waits after a pause (Waiting, or Pending after a wave with pause) can be continued`,
  );
}

/**
 * Lets a wave of a fleet plan start after a wave with `pause`: appends a continuation naming the
 * caller (spec.continuations) after the checks admission makes for kubectl, as the caller: the RBAC
 * verb continue for the target environment and `patch` on the plan; the entry carries the uid of the
 * plan the caller reviewed. A wave that does not wait, or is already continued, is a 409.
 */
export async function continuePlan(
  ctx: ApiContext,
  caller: Caller,
  namespace: string,
  name: string,
  opts: ContinueOptions = {},
): Promise<PromotionPlan> {
  const ref = `PromotionPlan ${namespace}/${name}`;
  // A status write by the controller between our read and write is harmless; another continuation
  // landing meanwhile makes the test below fail, and we re-read (and check again) after it.
  for (let attempt = 1; ; attempt++) {
    const p = await getPlan(ctx, caller, namespace, name);
    const w = await checkContinue(ctx, caller, p, opts);
    // Bound to the plan read above: admission refuses it on a plan with another uid.
    const entry: WaveContinuation = {
      wave: w.name,
      user: caller.username,
      ...(p.metadata.uid ? { planUID: p.metadata.uid } : {}),
      ...(opts.comment ? { comment: opts.comment } : {}),
    };
    const ops = p.spec.continuations
      ? [
          { op: 'test', path: '/spec/continuations', value: p.spec.continuations },
          { op: 'add', path: '/spec/continuations/-', value: entry },
        ]
      : // Had someone else added the first continuation meanwhile, this add would replace it, which
        // the schema's append-only rule refuses (422): we re-read then.
        [{ op: 'add', path: '/spec/continuations', value: [entry] }];
    try {
      return await ctx.control.jsonPatch<PromotionPlan>(resourcePath(KPROMO_TYPES.PromotionPlan, namespace, name), ops);
    } catch (e) {
      // Admission's refusal of our planUID: the plan was replaced between our read and our write.
      if (e instanceof KubeError && /must name the plan it continues/.test(e.message))
        throw new ApiError(409, stalePlanMessage(ref, opts.uid ?? p.metadata.uid ?? '', undefined, 'continuing'));
      const raced = isConflict(e) || (e instanceof KubeError && e.status === 422 && /test|append/i.test(e.message));
      if (raced && attempt < 3) continue;
      if (raced) throw new ApiError(409, `${ref} keeps changing (concurrent continuations); re-read it and retry`);
      kubeWriteError(e, `cannot continue wave ${w.name} of ${ref}`);
    }
  }
}
