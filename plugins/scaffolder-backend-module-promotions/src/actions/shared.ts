import type { BackstageCredentials } from '@backstage/backend-plugin-api';
import { InputError } from '@backstage/errors';
import type { createTemplateAction } from '@backstage/plugin-scaffolder-node';
import { namespaceProblem } from '@kpromo/plugin-promotions-common';

/** The credentials of the user who started the task: every action calls the promotions backend as them. */
export const initiator = (ctx: { getInitiatorCredentials(): Promise<BackstageCredentials> }) =>
  ctx.getInitiatorCredentials();

/** The shared namespace check (RFC 1123 label), before any call: a clear InputError otherwise. */
export function checkNamespace(namespace: string | undefined): void {
  const problem = namespace === undefined ? undefined : namespaceProblem(namespace);
  if (problem) throw new InputError(problem);
}

/**
 * An approval from a template is the initiator's explicit decision about one exact plan: the step
 * needs `confirm: true` (a checkbox the template shows) and, for an existing plan, `uid`: the
 * metadata.uid of the plan the template showed. The controller refuses (409) to approve a plan
 * whose uid differs (deleted and created again under the name since), so the approval cannot land on
 * a plan nobody reviewed.
 */
export function requireConfirmation(
  action: string,
  what: string,
  input: { confirm?: boolean; uid?: string },
  needsUid: boolean,
  nothingDone = 'nothing was approved',
): void {
  const missing = [
    ...(input.confirm === true ? [] : ['confirm: true']),
    ...(needsUid && !input.uid ? ['uid (the metadata.uid of the plan the template showed)'] : []),
  ];
  if (missing.length)
    throw new InputError(
      `${action} ${what} only with an explicit confirmation: set ${missing.join(' and ')} in the step's input (e.g. from a confirmation checkbox and the plan shown in the template); ${nothingDone}`,
    );
}

/** The zod an action's input fields are given (the scaffolder's own). */
type ActionInputFields = Exclude<
  NonNullable<Parameters<typeof createTemplateAction>[0]['schema']>['input'],
  ((...a: never[]) => unknown) | undefined
>;
type Zod = Parameters<ActionInputFields[string]>[0];

/** The inputs of an action on one plan the template showed: which plan, its uid, and the initiator's confirmation. */
export const reviewedPlanInput = (confirming: string) => ({
  namespace: (z: Zod) => z.string(),
  plan: (z: Zod) => z.string(),
  comment: (z: Zod) => z.string().max(1024).optional(),
  confirm: (z: Zod) => z.boolean().optional().describe(`Must be true: the initiator confirmed ${confirming}`),
  uid: (z: Zod) =>
    z
      .string()
      .optional()
      .describe(
        'Required: metadata.uid of the plan the template showed; another uid (the plan was recreated) is refused (409)',
      ),
});
