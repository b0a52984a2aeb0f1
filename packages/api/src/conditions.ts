import type { Static } from '@sinclair/typebox';
import type { Condition as ConditionSchema } from './schemaHelpers.js';

export type Condition = Static<typeof ConditionSchema>;
export type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

/**
 * Returns conditions with `input` set, keeping lastTransitionTime when the status did not change
 * (metav1 semantics), so repeated reconciles do not churn the object.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  input: ConditionInput,
  generation: number | undefined,
  now: Date = new Date(),
): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === input.type);
  const prev = i >= 0 ? list[i] : undefined;
  const next: Condition = {
    ...input,
    observedGeneration: generation,
    lastTransitionTime:
      prev && prev.status === input.status ? prev.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
  };
  if (generation === undefined) delete next.observedGeneration;
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

export function getCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return getCondition(conditions, type)?.status === 'True';
}
