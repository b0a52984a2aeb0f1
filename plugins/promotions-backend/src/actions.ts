import type { ActionsRegistryService } from '@backstage/backend-plugin-api/alpha';
import type { PromotionsService } from './service.js';

type Zod = typeof import('zod/v3').z;

/** A plan's progress, as the actions that change a plan answer it. */
const planOutput = (z: Zod) =>
  z
    .object({
      namespace: z.string(),
      name: z.string(),
      phase: z.string(),
      approved: z.boolean().describe("The target stage's approval policy is met"),
      approvers: z
        .array(z.object({ user: z.string() }).passthrough())
        .describe('Who approved, with when the controller saw it (observedAt)'),
      waitingFor: z.string().optional().describe('Who still must approve'),
      done: z.boolean(),
      apps: z.array(z.object({ application: z.string(), phase: z.string() }).passthrough()),
    })
    .passthrough();

/**
 * The uid guard shared by promote (required there: the contract refuses an approval without it,
 * with its own message), rollback (required unless approve is false) and continue-wave.
 */
const reviewedUid = (z: Zod, required: boolean | string = false) =>
  z
    .string()
    .optional()
    .describe(
      `${required === true ? 'Required: ' : required ? `Required ${required}: ` : ''}metadata.uid of the plan you reviewed; another uid (the plan was recreated) is refused`,
    );

/** Promotions in Backstage's actions registry (exposed as MCP tools by plugin-mcp-actions-backend). */
export function registerActions(registry: ActionsRegistryService, svc: PromotionsService): void {
  registerCreatePlan(registry, svc);
  registerPromote(registry, svc);
  registerContinueWave(registry, svc);
  registerRollback(registry, svc);
  registerReleaseStatus(registry, svc);
}

/** `create-plan`: a plan of the release candidates from one stage to the next; approved only when asked, with the digests reviewed. */
function registerCreatePlan(registry: ActionsRegistryService, svc: PromotionsService): void {
  registry.register({
    name: 'create-plan',
    title: 'Create a promotion plan',
    description:
      'Computes release candidates from one environment to the next and creates a PromotionPlan. Nothing is promoted unless approve is true (then promotion.plan.approve is needed for every candidate application).',
    attributes: { destructive: false, readOnly: false, idempotent: false },
    schema: {
      input: (z) =>
        z.object({
          namespace: z.string().optional().describe('Namespace of the kpromo CRs'),
          from: z.string().describe('Source environment'),
          to: z.string().describe('Target environment (the next stage)'),
          flow: z.string().optional(),
          applications: z.array(z.string()).optional(),
          teams: z.array(z.string()).optional(),
          name: z.string().optional(),
          approve: z.boolean().optional(),
          expect: z
            .record(z.string())
            .optional()
            .describe(
              'Required with approve: per application, the digest you reviewed (candidates[].from.digest of the diff); refused (409) unless the candidates are exactly these',
            ),
        }),
      output: (z) =>
        z.object({
          namespace: z.string(),
          name: z.string(),
          uid: z.string().describe('metadata.uid: what promote must name to approve this plan'),
          candidates: z.array(z.object({ application: z.string(), tag: z.string() })),
        }),
    },
    action: async ({ input, credentials }) => {
      const r = await svc.createPlan({ kind: 'backstage', credentials }, input);
      return {
        output: {
          namespace: r.plan.metadata.namespace ?? '',
          name: r.plan.metadata.name,
          uid: r.plan.metadata.uid ?? '',
          candidates: r.plan.spec.candidates.map((c) => ({ application: c.application, tag: c.from.tag })),
        },
      };
    },
  });
}

/** `promote`: the caller's approval of the plan they reviewed (its uid). */
function registerPromote(registry: ActionsRegistryService, svc: PromotionsService): void {
  registry.register({
    name: 'promote',
    title: 'Promote (approve) a plan',
    description:
      "Adds the caller's approval to a PromotionPlan; the controller promotes its candidates once the target stage's approval policy is met (see approved and waitingFor). Destructive.",
    attributes: { destructive: true, readOnly: false, idempotent: false },
    schema: {
      input: (z) =>
        z.object({
          namespace: z.string(),
          plan: z.string(),
          overrideFreeze: z
            .boolean()
            .optional()
            .describe(
              'Emergency: run despite a freeze window or a stopped line (needs the override-freeze verb and overrideReason)',
            ),
          overrideReason: z
            .string()
            .optional()
            .describe('Required with overrideFreeze: why, at least a sentence (20 characters, 3 words)'),
          comment: z.string().optional(),
          uid: reviewedUid(z, true),
        }),
      output: (z) => z.object({ plan: planOutput(z) }),
    },
    action: async ({ input, credentials }) => {
      const r = await svc.approve(
        { kind: 'backstage', credentials },
        { namespace: input.namespace, name: input.plan },
        {
          ...(input.overrideFreeze ? { overrideFreeze: true } : {}),
          ...(input.overrideReason ? { overrideReason: input.overrideReason } : {}),
          ...(input.comment ? { comment: input.comment } : {}),
          uid: input.uid,
        },
      );
      return { output: { plan: JSON.parse(JSON.stringify(r.progress)) } };
    },
  });
}

/** `continue-wave`: lets a fleet plan's next wave start after a pause. */
function registerContinueWave(registry: ActionsRegistryService, svc: PromotionsService): void {
  registry.register({
    name: 'continue-wave',
    title: "Continue a fleet plan's next wave",
    description:
      "Lets the next wave of a fleet PromotionPlan start after a wave with pause (a continuation naming the caller); the controller then promotes that wave's clusters. wave defaults to the wave that is Waiting. Needs promotion.continue for every application of the plan, and the RBAC verb continue at the controller. Destructive.",
    attributes: { destructive: true, readOnly: false, idempotent: false },
    schema: {
      input: (z) =>
        z.object({
          namespace: z.string(),
          plan: z.string(),
          wave: z.string().optional().describe('The wave to let start (default: the wave that is Waiting)'),
          comment: z.string().optional(),
          uid: reviewedUid(z),
        }),
      output: (z) => z.object({ plan: planOutput(z) }),
    },
    action: async ({ input, credentials }) => {
      const r = await svc.continue(
        { kind: 'backstage', credentials },
        { namespace: input.namespace, name: input.plan },
        {
          ...(input.wave ? { wave: input.wave } : {}),
          ...(input.comment ? { comment: input.comment } : {}),
          ...(input.uid ? { uid: input.uid } : {}),
        },
      );
      return { output: { plan: JSON.parse(JSON.stringify(r.progress)) } };
    },
  });
}

/** `rollback`: a plan restoring what a promotion replaced, approved by default. */
function registerRollback(registry: ActionsRegistryService, svc: PromotionsService): void {
  registry.register({
    name: 'rollback',
    title: 'Roll back a plan',
    description:
      'Creates (and by default approves) a plan restoring the versions a promotion replaced; its name is generated unless given, and returned. Destructive.',
    attributes: { destructive: true, readOnly: false, idempotent: false },
    schema: {
      input: (z) =>
        z.object({
          namespace: z.string(),
          plan: z.string(),
          uid: reviewedUid(z, 'unless approve is false'),
          name: z.string().optional(),
          approve: z.boolean().optional(),
        }),
      output: (z) => z.object({ plan: planOutput(z) }),
    },
    action: async ({ input, credentials }) => {
      const r = await svc.rollback(
        { kind: 'backstage', credentials },
        { namespace: input.namespace, name: input.plan },
        {
          ...(input.name ? { name: input.name } : {}),
          ...(input.approve !== undefined ? { approve: input.approve } : {}),
          ...(input.uid ? { uid: input.uid } : {}),
        },
      );
      return { output: { plan: JSON.parse(JSON.stringify(r.progress)) } };
    },
  });
}

/** `get-release-status`: a plan's progress or an application's versions (read-only). */
function registerReleaseStatus(registry: ActionsRegistryService, svc: PromotionsService): void {
  registry.register({
    name: 'get-release-status',
    title: 'Release status',
    description: "A plan's per-application progress, or an application's version and health in every environment.",
    attributes: { destructive: false, readOnly: true, idempotent: true },
    schema: {
      input: (z) =>
        z.object({ namespace: z.string().optional(), plan: z.string().optional(), application: z.string().optional() }),
      output: (z) => z.object({ plan: planOutput(z).optional(), application: z.object({}).passthrough().optional() }),
    },
    action: async ({ input, credentials }) => {
      const r = await svc.releaseStatus({ kind: 'backstage', credentials }, input);
      return { output: JSON.parse(JSON.stringify(r)) };
    },
  });
}
