import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { type BackstageCredentials, resolveSafeChildPath } from '@backstage/backend-plugin-api';
import { ConflictError, InputError, NotFoundError } from '@backstage/errors';
import { createTemplateAction } from '@backstage/plugin-scaffolder-node';
import {
  type ApplicationInfo,
  continuedWave,
  namespaceProblem,
  nothingToAdoptMessage,
  type PlanDetails,
} from '@kpromo/plugin-promotions-common';
import type { PromotionsBackendClient } from './client.js';

/** The shared namespace check (RFC 1123 label), before any call: a clear InputError otherwise. */
function checkNamespace(namespace: string | undefined): void {
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
function requireConfirmation(
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
const reviewedPlanInput = (confirming: string) => ({
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

/**
 * The kpromo:* scaffolder actions. Each call goes to the promotions backend as the user who started
 * the task (`ctx.getInitiatorCredentials()`, see {@link PromotionsBackendClient}): the same
 * Backstage permission checks as the REST routes, then the controller acts as that user.
 *
 * @param o.defaultNamespace CR namespace for `kpromo:release:status` with a plan and no namespace
 *   (`promotions.controller.defaultNamespace`); the other actions leave an omitted namespace to the
 *   promotions backend.
 */
export function createPromotionsTemplateActions(o: { client: PromotionsBackendClient; defaultNamespace?: string }) {
  const { client } = o;
  const as = (ctx: { getInitiatorCredentials(): Promise<BackstageCredentials> }) => ctx.getInitiatorCredentials();
  return [
    createTemplateAction({
      id: 'kpromo:plan:create',
      description: 'Creates a kpromo PromotionPlan from filters (optionally approved right away).',
      schema: {
        input: {
          namespace: (z) => z.string().optional().describe('Namespace of the kpromo CRs'),
          from: (z) => z.string().describe('Source environment'),
          to: (z) => z.string().describe('Target environment'),
          flow: (z) => z.string().optional(),
          applications: (z) => z.array(z.string()).optional(),
          teams: (z) => z.array(z.string()).optional(),
          name: (z) => z.string().optional(),
          approve: (z) =>
            z.boolean().optional().describe('Approve right away as the initiator (needs confirm: true and expect)'),
          expect: (z) =>
            z
              .record(z.string())
              .optional()
              .describe(
                'Required with approve: per application, the digest the template showed (candidates[].from.digest of the diff); refused (409) unless the candidates are exactly these',
              ),
          confirm: (z) =>
            z
              .boolean()
              .optional()
              .describe('Required to be true with approve: the initiator confirmed approving the plan'),
        },
        output: {
          namespace: (z) => z.string(),
          plan: (z) => z.string(),
          uid: (z) => z.string().describe('metadata.uid of the plan (what a promote step confirms)'),
          applications: (z) => z.array(z.string()),
        },
      },
      async handler(ctx) {
        checkNamespace(ctx.input.namespace);
        if (ctx.input.approve) requireConfirmation('kpromo:plan:create', 'creates an approved plan', ctx.input, false);
        const { confirm: _confirm, ...body } = ctx.input;
        const r = await client.createPlan(await as(ctx), body);
        ctx.logger.info(`created plan ${r.plan.metadata.namespace}/${r.plan.metadata.name}`);
        ctx.output('namespace', r.plan.metadata.namespace ?? '');
        ctx.output('plan', r.plan.metadata.name);
        ctx.output('uid', r.plan.metadata.uid ?? '');
        ctx.output(
          'applications',
          r.plan.spec.candidates.map((c) => c.application),
        );
      },
    }),
    createTemplateAction({
      id: 'kpromo:plan:promote',
      description:
        "Adds the task initiator's approval to a kpromo PromotionPlan; the controller promotes it once the target stage's approval policy is met.",
      schema: {
        input: {
          ...reviewedPlanInput('approving this plan'),
          overrideFreeze: (z) =>
            z.boolean().optional().describe('Run despite a freeze window (needs the override-freeze verb)'),
        },
        output: {
          phase: (z) => z.string(),
          approved: (z) => z.boolean().describe("The target stage's approval policy is met"),
          approvers: (z) => z.array(z.string()).describe('Users who approved the plan, in order'),
          waitingFor: (z) => z.string().optional().describe('Who still must approve'),
        },
      },
      async handler(ctx) {
        checkNamespace(ctx.input.namespace);
        requireConfirmation(
          'kpromo:plan:promote',
          `approves plan ${ctx.input.namespace}/${ctx.input.plan}`,
          ctx.input,
          true,
        );
        const r = await client.approve(
          await as(ctx),
          { namespace: ctx.input.namespace, name: ctx.input.plan },
          {
            ...(ctx.input.overrideFreeze ? { overrideFreeze: true } : {}),
            ...(ctx.input.comment ? { comment: ctx.input.comment } : {}),
            // requireConfirmation refused a missing uid; the backend's contract would too.
            uid: ctx.input.uid ?? '',
          },
        );
        ctx.logger.info(
          `approved plan ${ctx.input.namespace}/${ctx.input.plan}${r.progress.approved ? '' : ` (still waiting for ${r.progress.waitingFor ?? 'more approvals'})`}`,
        );
        ctx.output('phase', r.progress.phase);
        ctx.output('approved', r.progress.approved);
        ctx.output(
          'approvers',
          r.progress.approvers.map((a) => a.user),
        );
        if (r.progress.waitingFor) ctx.output('waitingFor', r.progress.waitingFor);
      },
    }),
    createTemplateAction({
      id: 'kpromo:plan:continue',
      description:
        'Lets the next wave of a kpromo fleet PromotionPlan start after a wave with pause, as the task initiator (verb continue).',
      schema: {
        input: {
          ...reviewedPlanInput('letting this wave start'),
          wave: (z) => z.string().optional().describe('The wave to let start (default: the wave that is Waiting)'),
        },
        output: {
          phase: (z) => z.string(),
          wave: (z) => z.string().optional().describe('The wave the continuation lets start'),
          currentWave: (z) => z.string().optional().describe('The first wave not final, as the plan reads now'),
        },
      },
      async handler(ctx) {
        checkNamespace(ctx.input.namespace);
        requireConfirmation(
          'kpromo:plan:continue',
          `lets a wave of plan ${ctx.input.namespace}/${ctx.input.plan} start`,
          ctx.input,
          true,
          'no wave was continued',
        );
        const credentials = await as(ctx);
        const r = await client.continuePlan(
          credentials,
          { namespace: ctx.input.namespace, name: ctx.input.plan },
          {
            ...(ctx.input.wave ? { wave: ctx.input.wave } : {}),
            ...(ctx.input.comment ? { comment: ctx.input.comment } : {}),
            // requireConfirmation refused a missing uid; the backend's contract would too.
            uid: ctx.input.uid ?? '',
          },
        );
        // The initiator as the backend names them to the controller (a user's entity ref).
        const user = (credentials.principal as { type: string; userEntityRef?: string }).userEntityRef;
        const wave = continuedWave(r.plan, { wave: ctx.input.wave, user })?.name;
        ctx.logger.info(`wave ${wave ?? '(waiting)'} of plan ${ctx.input.namespace}/${ctx.input.plan} continued`);
        ctx.output('phase', r.progress.phase);
        if (wave) ctx.output('wave', wave);
        if (r.progress.currentWave) ctx.output('currentWave', r.progress.currentWave);
      },
    }),
    createTemplateAction({
      id: 'kpromo:plan:rollback',
      description: 'Creates (and by default approves) a rollback of a kpromo PromotionPlan.',
      schema: {
        input: {
          namespace: (z) => z.string(),
          plan: (z) => z.string(),
          name: (z) => z.string().optional(),
          approve: (z) =>
            z
              .boolean()
              .optional()
              .describe('Approve the rollback as the initiator (the default; needs confirm: true and uid)'),
          confirm: (z) =>
            z.boolean().optional().describe('Must be true unless approve is false: the initiator confirmed'),
          uid: (z) =>
            z
              .string()
              .optional()
              .describe('metadata.uid of the plan to roll back, as the template showed it (unless approve is false)'),
        },
        output: { plan: (z) => z.string().describe('Name of the rollback plan (generated unless name is given)') },
      },
      async handler(ctx) {
        checkNamespace(ctx.input.namespace);
        // The promotions backend approves a rollback unless told otherwise: confirm that approval.
        if (ctx.input.approve !== false) {
          requireConfirmation(
            'kpromo:plan:rollback',
            `approves a rollback of plan ${ctx.input.namespace}/${ctx.input.plan}`,
            ctx.input,
            true,
          );
          const shown = await client.getPlan(
            await as(ctx),
            { namespace: ctx.input.namespace, name: ctx.input.plan },
            ctx.signal,
          );
          if (shown.plan.metadata.uid !== ctx.input.uid)
            throw new ConflictError(
              `plan ${ctx.input.namespace}/${ctx.input.plan} is not the plan the template showed (uid ${ctx.input.uid}, now ${shown.plan.metadata.uid ?? 'none'}): it was recreated since; nothing was rolled back`,
            );
        }
        const r = await client.rollback(
          await as(ctx),
          { namespace: ctx.input.namespace, name: ctx.input.plan },
          {
            ...(ctx.input.name ? { name: ctx.input.name } : {}),
            ...(ctx.input.approve !== undefined ? { approve: ctx.input.approve } : {}),
            // The plan the template showed: the controller refuses (409) one recreated after the check above.
            ...(ctx.input.uid ? { uid: ctx.input.uid } : {}),
          },
        );
        ctx.logger.info(`created rollback ${r.plan.metadata.name} of ${ctx.input.namespace}/${ctx.input.plan}`);
        ctx.output('plan', r.plan.metadata.name);
      },
    }),
    createTemplateAction({
      id: 'kpromo:adopt:propose',
      description:
        "Proposes kpromo Applications for the workloads running in a flow's Environments, as the initiator, and writes them into the workspace (one YAML file each) for a pull request. Nothing is applied.",
      schema: {
        input: {
          namespace: (z) => z.string().optional().describe('Namespace of the kpromo CRs'),
          flow: (z) =>
            z.string().optional().describe("The flow to adopt into (the namespace's only flow when omitted)"),
          applications: (z) =>
            z.array(z.string()).optional().describe('Applications to propose, by name (all candidates when omitted)'),
          owner: (z) => z.string().optional().describe('Owning team where no workload label names one'),
          ownerLabel: (z) => z.string().optional().describe('Workload label naming the owning team (default team)'),
          directory: (z) =>
            z
              .string()
              .optional()
              .describe('Workspace directory for the YAML files (default kpromo); must stay inside the workspace'),
          requireResources: (z) =>
            z.boolean().optional().describe('Fail when nothing is proposed (default true): no empty pull request'),
        },
        output: {
          namespace: (z) => z.string(),
          flow: (z) => z.string(),
          files: (z) => z.array(z.string()).describe('Workspace paths written'),
          yaml: (z) => z.string().describe('Every resource as YAML documents, for review'),
          report: (z) => z.string().describe('What was chosen, noted or left undecided, one line each'),
          candidates: (z) => z.array(z.string()).describe('Every Application discovery proposes'),
          governed: (z) =>
            z.array(z.string()).describe('Kind/name of changes that need RBAC verb govern (release policy) to apply'),
        },
      },
      async handler(ctx) {
        checkNamespace(ctx.input.namespace);
        const dir = ctx.input.directory ?? 'kpromo';
        // Before any call: a directory outside the workspace is refused (resolveSafeChildPath throws).
        const base = resolveSafeChildPath(ctx.workspacePath, dir);
        const { directory: _d, requireResources, applications, ...rest } = ctx.input;
        // An empty choice (a form left blank) means every candidate, as an absent one.
        const body = { ...rest, ...(applications?.length ? { applications } : {}) };
        const r = await client.proposeAdoption(await as(ctx), body, ctx.signal);
        const report = r.findings.map((f) => `${f.level}  ${f.subject}: ${f.message}`);
        for (const line of report) ctx.logger.info(line);
        if (!r.resources.length && requireResources !== false)
          throw new InputError(`${nothingToAdoptMessage(r)}${report.length ? ` (${report.join('; ')})` : ''}`);
        const files: string[] = [];
        for (const res of r.resources) {
          const path = resolveSafeChildPath(base, res.fileName);
          await mkdir(dirname(path), { recursive: true });
          await writeFile(path, res.yaml);
          files.push(`${dir.replace(/\/+$/, '')}/${res.fileName}`);
        }
        ctx.logger.info(`proposed ${files.length} resource(s) for flow ${r.namespace}/${r.flow}: ${files.join(', ')}`);
        ctx.output('namespace', r.namespace);
        ctx.output('flow', r.flow);
        ctx.output('files', files);
        ctx.output('yaml', r.yaml);
        ctx.output('report', report.join('\n'));
        ctx.output(
          'candidates',
          r.candidates.map((c) => c.application),
        );
        ctx.output(
          'governed',
          r.resources.filter((x) => x.governed).map((x) => `${x.kind}/${x.name}`),
        );
      },
    }),
    createTemplateAction({
      id: 'kpromo:release:status',
      description: "A plan's progress (optionally waiting until it finishes), or an application's versions.",
      schema: {
        input: {
          namespace: (z) => z.string().optional(),
          plan: (z) => z.string().optional(),
          application: (z) => z.string().optional(),
          waitSeconds: (z) =>
            z.number().int().min(0).max(3600).optional().describe('Wait up to this long for the plan to finish'),
        },
        output: { phase: (z) => z.string().optional(), status: (z) => z.any() },
      },
      async handler(ctx) {
        const { plan, application } = ctx.input;
        if (!!plan === !!application) throw new InputError('pass exactly one of plan or application');
        checkNamespace(ctx.input.namespace);
        const credentials = await as(ctx);
        const namespace = ctx.input.namespace ?? o.defaultNamespace;
        const status = async (): Promise<{ plan?: PlanDetails['progress']; application?: ApplicationInfo }> => {
          if (plan) {
            if (!namespace) throw new InputError('namespace is required');
            return { plan: (await client.getPlan(credentials, { namespace, name: plan }, ctx.signal)).progress };
          }
          const apps = await client.applications(credentials, namespace, ctx.signal);
          const a = apps.items.find((x) => x.name === application);
          if (!a) throw new NotFoundError(`Application ${namespace ?? ''}/${application} not found`);
          return { application: a };
        };
        const deadline = Date.now() + (ctx.input.waitSeconds ?? 0) * 1000;
        for (;;) {
          const r = await status();
          if (!r.plan || r.plan.done || Date.now() >= deadline || ctx.signal?.aborted) {
            ctx.output('phase', r.plan?.phase);
            ctx.output('status', JSON.parse(JSON.stringify(r)));
            return;
          }
          await new Promise((res) => setTimeout(res, 2000));
        }
      },
    }),
  ];
}
