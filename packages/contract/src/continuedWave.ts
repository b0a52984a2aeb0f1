import type { PromotionPlan } from '@kpromo/api';

/** The wave a continue call let start, as the plan the controller answered shows it. */
export interface ContinuedWave {
  /** The wave's name (status.waves[].name). */
  name: string;
  /** Its clusters, when the plan's status lists the wave. */
  clusters?: string[];
}

/**
 * The wave a continue call (POST /plans/{namespace}/{name}/continue) just let start, read from the
 * plan the controller answered, the same for every door (backend, CLI, scaffolder, Port):
 * - the wave asked for: a wave takes one continuation, so the controller continued that one or refused;
 * - else the wave of the last continuation naming the caller (spec.continuations is append-only, and
 *   the controller appends the caller's as the identity it acted for);
 * - else, for a door that does not know that identity (`user` omitted), the last continuation.
 * Undefined when none of these names a wave.
 */
export function continuedWave(
  plan: PromotionPlan,
  asked: { wave?: string; user?: string } = {},
): ContinuedWave | undefined {
  const continuations = (plan.spec.continuations ?? []).filter(
    (c) => asked.user === undefined || c.user === asked.user,
  );
  const name = asked.wave || continuations.at(-1)?.wave;
  if (!name) return undefined;
  const wave = plan.status?.waves?.find((w) => w.name === name);
  return { name, ...(wave ? { clusters: [...wave.clusters] } : {}) };
}
