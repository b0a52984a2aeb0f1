import { isTerminalPlan, type PromotionPlan } from '@kpromo/api';
import { planHold, shortDigest } from '@kpromo/contract';
import type { LoggingLevel } from '@modelcontextprotocol/server';
import type { ApiContext } from '../api/context.js';
import type { ChangeFeed } from './feed.js';
import { type Extra, untilCancelled } from './guard.js';

/** Steps of one application in a plan: copy, write, rollout, verdict. */
const STEP: Record<string, number> = { Pending: 0, Copying: 1, Writing: 2, RollingOut: 3 };
const STEPS_PER_APP = 4;
const stepOf = (phase: string) => STEP[phase] ?? STEPS_PER_APP;

/** How long promote/rollback follow a plan at most before answering with its state so far. */
export const FOLLOW_MAX_MS = 30 * 60_000;

export type FollowEnd =
  /** The plan reached a terminal phase. */
  | 'finished'
  /** The controller saw the approval, but the plan waits: more approvals, a freeze window, soak time. */
  | 'waiting'
  | 'timeout';

export interface FollowResult {
  plan: PromotionPlan;
  end: FollowEnd;
}

/**
 * Follows a plan through the informer cache until it finishes (or is held by its gate), reporting
 * per-application progress (copy, write, rollout, verdict) as MCP progress notifications when the
 * client asked for them (a progressToken) and each application phase change as a log message.
 * Cancelling the request stops the waiting; the plan itself goes on.
 */
export async function followPlan(
  ctx: ApiContext,
  feed: ChangeFeed,
  extra: Extra,
  ns: string,
  name: string,
  /** metadata.generation of our write: the gate is only judged once the controller has seen it. */
  generation: number | undefined,
  maxMs = FOLLOW_MAX_MS,
): Promise<FollowResult> {
  const token = extra.mcpReq._meta?.progressToken;
  let sent = -1;
  const phases = new Map<string, string>();
  let last: PromotionPlan | undefined;

  const report = async (p: PromotionPlan) => {
    const apps = p.status?.apps ?? [];
    const total = Math.max(apps.length, p.spec.candidates.length) * STEPS_PER_APP;
    const done = apps.reduce((n, a) => n + stepOf(a.phase), 0);
    const changes: string[] = [];
    for (const a of apps) {
      if (phases.get(a.application) === a.phase) continue;
      phases.set(a.application, a.phase);
      const detail = [a.targetTag, shortDigest(a.digest), a.reason].filter(Boolean).join(' ');
      changes.push(`${a.application}: ${a.phase}${detail ? ` (${detail})` : ''}`);
      const level: LoggingLevel = a.phase === 'Failed' ? 'error' : 'info';
      await extra.mcpReq
        .log(level, { plan: `${ns}/${name}`, application: a.application, phase: a.phase, message: a.message }, 'kpromo')
        .catch(() => undefined);
    }
    // progress must increase: an app retrying (back to Copying) does not move it backwards.
    if (token !== undefined && done > sent && (changes.length || sent < 0)) {
      sent = done;
      await extra.mcpReq
        .notify({
          method: 'notifications/progress',
          params: {
            progressToken: token,
            progress: done,
            ...(total ? { total } : {}),
            message: `${p.status?.phase ?? 'Pending'}${changes.length ? `: ${changes.join('; ')}` : ''}`,
          },
        })
        .catch(() => undefined);
    }
  };

  const held = (p: PromotionPlan) => {
    if ((p.status?.phase ?? 'Pending') !== 'Pending') return false;
    if (generation !== undefined && (p.status?.observedGeneration ?? -1) < generation) return false;
    const g = p.status?.gate;
    return !!g && !!planHold(g);
  };

  let resolveEnd!: (e: FollowEnd) => void;
  const ended = new Promise<FollowEnd>((r) => {
    resolveEnd = r;
  });
  let queue = Promise.resolve();
  const onUpdate = (p: PromotionPlan) => {
    last = p;
    queue = queue.then(() => report(p));
    if (isTerminalPlan(p)) void queue.then(() => resolveEnd('finished'));
    else if (held(p)) void queue.then(() => resolveEnd('waiting'));
  };
  const stop = feed.onPlan(ns, name, onUpdate);
  const timer = setTimeout(() => resolveEnd('timeout'), maxMs);
  try {
    const current = ctx.cache.getPlan(ns, name);
    if (current) onUpdate(current);
    const end = await untilCancelled(extra.mcpReq.signal, ended);
    await queue;
    return { plan: last ?? current!, end };
  } finally {
    stop();
    clearTimeout(timer);
  }
}
