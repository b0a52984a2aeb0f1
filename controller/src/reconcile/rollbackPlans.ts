/**
 * Label of rollback plans the controller writes (its automatic rollbacks, and a person's rollback
 * made through the API): the metadata.uid of the plan they roll back. Only the controller sets or
 * changes it (admission, verb automate); a plan recreated under the rolled-back name is another
 * uid, and such a rollback does not start (planDecisions.ts).
 */
export const ROLLBACK_OF_UID_LABEL = 'promotions.kpromo.dev/rollback-of-uid';

/**
 * Pure: the generateName of a rollback plan, the controller's automatic one and a person's made
 * through the API alike. The apiserver adds a random suffix (and cuts a long prefix to 58
 * characters), so nobody can create the plan's name beforehand: a plan squatting
 * `<plan>-rollback` blocks no rollback. Callers read the name the create returned.
 */
export function rollbackNamePrefix(plan: string, application?: string): string {
  const base = application ? `${plan}-rollback-${application}` : `${plan}-rollback`;
  return `${base.slice(0, 57).replace(/[-.]+$/, '')}-`;
}
