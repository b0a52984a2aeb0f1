import { type Application, isRollback, type PromotionPlan } from '@kpromo/api';
import { DEFAULT_SKIPPED_SHOWN, MAX_SKIPPED_SHOWN, skippedSummaryOf } from '@kpromo/contract';
import {
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  type InputRequiredResult,
  inputRequired,
  inputResponse,
  type McpServer,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { who } from '../api/access.js';
import type { ApiContext } from '../api/context.js';
import { ApiError } from '../api/context.js';
import { checkContinue, continuePlan } from '../api/continueWave.js';
import { filterPlans, InvalidPlanContinue, pagePlans } from '../api/planList.js';
import {
  approvePlan,
  checkApproval,
  checkRollback,
  createPlan,
  diff,
  findApplications,
  getPlan,
  listEnvironments,
  listPlans,
  rollbackPlan,
} from '../api/promotions.js';
import type { Caller } from '../auth/identity.js';
import { globToRegExp } from '../candidates/computeCandidates.js';
import { versionReader } from '../candidates/versionReader.js';
import type { KpromoEventLike } from '../kube/cacheView.js';
import { EVENT, resourcePath } from '../kube/paths.js';
import { registerAdoptTools } from './adoptTools.js';
import { name, nsArg } from './args.js';
import { changeFeed } from './feed.js';
import { BadRequest, type Extra, type McpServerOptions, Refused, runTool } from './guard.js';
import { registerHistoryTools } from './historyTools.js';
import { registerLineStopTools } from './lineStopTools.js';
import { type FollowResult, followPlan } from './progress.js';
import { clip, redactMap } from './redact.js';
import { appLine, candidateLines, capped, planDetail, planLine } from './summary.js';
import {
  AppOut,
  appOut,
  arrivalIndex,
  ConditionOut,
  conditionsOut,
  EnvOut,
  PlanOut,
  pipelineEnvironments,
  planOut,
  VersionOut,
  versionOut,
} from './views.js';

const HEALTH = ['Healthy', 'Progressing', 'Degraded', 'Missing', 'Unknown'] as const;

const EventOut = z.object({
  type: z.string(),
  reason: z.string(),
  message: z.string(),
  count: z.number().int().optional(),
  lastTimestamp: z.string().optional(),
});

/** Cursor: opaque, bound to the query it was issued for. */
function encodeCursor(offset: number, key: string): string {
  return Buffer.from(JSON.stringify({ o: offset, k: key })).toString('base64url');
}
function decodeCursor(cursor: string, key: string): number {
  try {
    const c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { o?: unknown; k?: unknown };
    if (typeof c.o === 'number' && Number.isInteger(c.o) && c.o >= 0 && c.k === key) return c.o;
  } catch {
    // fall through
  }
  throw new BadRequest('invalid cursor: pass the nextCursor returned by the same list query, unchanged');
}

function page<T>(items: T[], args: { cursor?: string; pageSize?: number }, key: string, dflt: number) {
  const size = args.pageSize ?? dflt;
  const start = args.cursor ? decodeCursor(args.cursor, key) : 0;
  const slice = items.slice(start, start + size);
  const next = start + size < items.length ? encodeCursor(start + size, key) : undefined;
  return { slice, total: items.length, ...(next ? { nextCursor: next } : {}) };
}

async function recentEvents(
  ctx: ApiContext,
  o: McpServerOptions,
  caller: Caller,
  ns: string,
  kind: string,
  objName: string,
  signal?: AbortSignal,
): Promise<{ events: z.infer<typeof EventOut>[]; eventsNote?: string }> {
  const d = await o.authorizer.check(caller, { verb: 'list', resource: 'events', group: '', namespace: ns });
  if (!d.allowed) return { events: [], eventsNote: `${caller.username} may not list events in ${ns}; events omitted` };
  // The cache's watch when it has one (an apiserver list scans every Event of the namespace).
  const cached = ctx.cache.recentEvents?.(ns, kind, objName);
  const l = cached
    ? { items: cached }
    : await ctx.control.request<{ items: KpromoEventLike[] }>('GET', resourcePath(EVENT, ns), {
        query: { fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${objName}`, limit: 200 },
        ...(signal ? { signal: AbortSignal.any([signal, AbortSignal.timeout(30_000)]) } : {}),
      });
  const at = (e: KpromoEventLike) =>
    e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata?.creationTimestamp ?? '';
  return {
    events: l.items
      .sort((a, b) => at(b).localeCompare(at(a)))
      .slice(0, 20)
      .map((e) => ({
        type: e.type ?? 'Normal',
        reason: e.reason ?? '',
        message: clip(e.message, 512) ?? '',
        ...(e.count !== undefined ? { count: e.count } : {}),
        ...(at(e) ? { lastTimestamp: at(e) } : {}),
      })),
  };
}

function appsView(ctx: ApiContext, apps: Application[], env?: string): AppOut[] {
  const now = Date.now();
  const idx = arrivalIndex(ctx, apps.length === 1 ? apps[0].metadata.namespace : undefined);
  const read = versionReader(ctx.cache);
  return apps.map((a) => {
    const envs = pipelineEnvironments(ctx, a.metadata.namespace ?? '').filter((e) => !env || e.metadata.name === env);
    return appOut(
      a,
      envs.map((e) => versionOut(ctx, a, read(a, e), now, idx)),
    );
  });
}

const filterArgs = {
  applications: z.array(z.string().min(1).max(253)).max(100).optional().describe('Application names or globs (* ?)'),
  teams: z.array(z.string().min(1)).max(50).optional().describe('Owning teams'),
  matchLabels: z.record(z.string(), z.string()).optional().describe('Labels every application must have'),
  tagPattern: z
    .string()
    .max(256)
    .optional()
    .describe('Regular expression (RE2 syntax: no backreferences or lookaround) source tags must match'),
};

const CandidateOut = z.object({
  application: z.string(),
  from: z.object({
    tag: z.string(),
    digest: z.string(),
    since: z.string().optional(),
    ageSeconds: z.number().optional(),
  }),
  to: z
    .object({
      tag: z.string().optional(),
      digest: z.string().optional(),
      since: z.string().optional(),
      ageSeconds: z.number().optional(),
    })
    .optional(),
});
const SkippedOut = z.object({ application: z.string(), reason: z.string(), message: z.string() });
/** The skipped applications an answer lists (the first skippedLimit, actionable first) and counts of all. */
const skippedOut = {
  skipped: z.array(SkippedOut),
  skippedTotal: z.number().int(),
  skippedByReason: z.record(z.string(), z.number().int()),
};
/**
 * Candidates listed in a diff/plan answer. At 5,000 applications a diff has thousands: all of them
 * made a 320 KiB answer that costs the server its serialisation and an agent its context, so the
 * answer lists the first ones (by name) and counts all (`candidatesTotal`).
 */
const DEFAULT_CANDIDATES_SHOWN = 100;
const MAX_CANDIDATES_SHOWN = 10_000;
const candidateLimitArg = {
  candidateLimit: z
    .number()
    .int()
    .min(0)
    .max(MAX_CANDIDATES_SHOWN)
    .optional()
    .describe(
      `Candidates to list, by application name (default ${DEFAULT_CANDIDATES_SHOWN}); candidatesTotal counts all`,
    ),
};
const firstCandidates = <T>(all: T[], limit: number | undefined) => all.slice(0, limit ?? DEFAULT_CANDIDATES_SHOWN);
const skippedLimitArg = {
  skippedLimit: z
    .number()
    .int()
    .min(0)
    .max(MAX_SKIPPED_SHOWN)
    .optional()
    .describe(
      `Skipped applications to list (default ${DEFAULT_SKIPPED_SHOWN}, actionable reasons first); counts cover all`,
    ),
};

const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

const pageNote = (shown: number, total: number, next?: string) =>
  `${shown === total ? '' : `showing ${shown} of ${total}`}${next ? `${shown === total ? '' : '; '}more: pass nextCursor as cursor` : ''}`;

export function registerTools(server: McpServer, ctx: ApiContext, o: McpServerOptions): void {
  const nsOf = (ns?: string) => ns ?? ctx.namespace;
  const dfltPage = o.defaultPageSize ?? 50;
  const feed = changeFeed(ctx);

  // ---- list ----
  const listIn = z.object({
    kind: z.enum(['applications', 'environments', 'plans']).default('applications'),
    namespace: nsArg,
    environment: name('environment')
      .optional()
      .describe(
        'Only versions in this environment (applications); plans into it (their target, as the HTTP API filters)',
      ),
    type: z
      .enum(['service', 'job', 'workflow', 'rollout'])
      .optional()
      .describe('Application type (apps, jobs, Argo workflows, rollouts)'),
    name: z.string().min(1).max(253).optional().describe('Name glob, e.g. "check*"'),
    team: z.string().min(1).optional().describe('Owning team'),
    labels: z.record(z.string(), z.string()).optional().describe('Labels that must all match'),
    health: z.enum(HEALTH).optional().describe('Health in `environment`, or in any environment when none is given'),
    pageSize: z.number().int().min(1).max(200).optional().describe(`Items per page (default ${dfltPage})`),
    cursor: z.string().max(512).optional().describe('nextCursor from the previous page'),
  });
  server.registerTool(
    'list',
    {
      title: 'List applications, environments or promotion plans',
      description:
        'Lists kpromo Applications (with the version and health in every Environment, in pipeline order), Environments or PromotionPlans from the controller cache. Filters: environment, type, name glob, team, labels, health. Paginated: pass nextCursor back as cursor.',
      inputSchema: listIn,
      outputSchema: z.object({
        kind: z.string(),
        namespace: z.string(),
        total: z.number().int(),
        nextCursor: z.string().optional(),
        applications: z.array(AppOut).optional(),
        environments: z.array(EnvOut).optional(),
        plans: z.array(PlanOut).optional(),
      }),
      annotations: READ,
    },
    (args, extra: Extra) => {
      const ns = nsOf(args.namespace);
      const resource = { applications: 'applications', environments: 'environments', plans: 'promotionplans' }[
        args.kind
      ];
      return runTool(
        o,
        'list',
        args,
        extra,
        { access: () => [{ verb: 'list', resource, namespace: ns }] },
        async (caller) => {
          const glob = args.name ? globToRegExp(args.name) : undefined;
          const key = JSON.stringify({ ...args, cursor: undefined, pageSize: undefined, namespace: ns });
          const byName = <T extends { metadata: { name: string } }>(a: T, b: T) =>
            a.metadata.name.localeCompare(b.metadata.name);
          if (args.kind === 'environments') {
            const order = pipelineEnvironments(ctx, ns).map((e) => e.metadata.name);
            const envs = (await listEnvironments(ctx, caller, { namespace: ns }))
              .filter((e) => !glob || glob.test(e.name))
              .sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name) || a.name.localeCompare(b.name));
            const p = page(envs, args, key, dfltPage);
            const environments = p.slice.map((e) => ({
              namespace: e.namespace,
              name: e.name,
              ...(e.tier ? { tier: e.tier } : {}),
              targetNamespace: e.targetNamespace,
              registry: e.registry,
              delivery: e.delivery,
            }));
            return {
              data: {
                kind: args.kind,
                namespace: ns,
                total: p.total,
                ...(p.nextCursor ? { nextCursor: p.nextCursor } : {}),
                environments,
              },
              text: capped([
                `${p.total} environment(s) in ${ns}, in pipeline order ${pageNote(p.slice.length, p.total, p.nextCursor)}`.trim(),
                ...environments.map(
                  (e) =>
                    `  ${e.name}${e.tier ? ` (${e.tier})` : ''}: namespace ${e.targetNamespace}, registry ${e.registry}, delivery ${e.delivery}`,
                ),
              ]),
            };
          }
          if (args.kind === 'plans') {
            // The HTTP API's filter (environment: the plan's target) and paging (newest first, its
            // continue token as nextCursor), so both doors list the same plans the same way.
            const named = (await listPlans(ctx, caller, { namespace: ns })).filter(
              (pl) => !glob || glob.test(pl.metadata.name),
            );
            let p: ReturnType<typeof pagePlans>;
            try {
              p = pagePlans(filterPlans(named, { environment: args.environment }), {
                limit: args.pageSize ?? dfltPage,
                continue: args.cursor,
              });
            } catch (e) {
              if (e instanceof InvalidPlanContinue) throw new BadRequest(`invalid cursor: ${e.message}`);
              throw e;
            }
            const out = p.items.map(planOut);
            return {
              data: {
                kind: args.kind,
                namespace: ns,
                total: p.total,
                ...(p.continue ? { nextCursor: p.continue } : {}),
                plans: out,
              },
              text: capped([
                `${p.total} plan(s) in ${ns} ${pageNote(out.length, p.total, p.continue)}`.trim(),
                ...out.map((x) => `  ${planLine(x)}`),
              ]),
            };
          }
          if (args.environment && !ctx.cache.getEnvironment(ns, args.environment))
            throw new ApiError(404, `Environment "${args.environment}" not found in namespace ${ns}`);
          // The same authorised, filtered list GET /applications answers.
          const apps = (
            await findApplications(ctx, caller, {
              namespace: ns,
              ...(args.name ? { applications: [args.name] } : {}),
              ...(args.team ? { teams: [args.team] } : {}),
              ...(args.labels ? { labelSelector: args.labels } : {}),
              ...(args.type ? { type: args.type } : {}),
            })
          ).sort(byName);
          // Health needs the versions of every app; otherwise only the page is rendered.
          const health = args.health;
          const p = health
            ? page(
                appsView(ctx, apps, args.environment).filter((v) => v.versions.some((x) => x.health === health)),
                args,
                key,
                dfltPage,
              )
            : (() => {
                const q = page(apps, args, key, dfltPage);
                return { ...q, slice: appsView(ctx, q.slice, args.environment) };
              })();
          return {
            data: {
              kind: args.kind,
              namespace: ns,
              total: p.total,
              ...(p.nextCursor ? { nextCursor: p.nextCursor } : {}),
              applications: p.slice,
            },
            text: capped([
              `${p.total} application(s) in ${ns} ${pageNote(p.slice.length, p.total, p.nextCursor)}`.trim(),
              ...p.slice.map((a) => `  ${appLine(a)}`),
            ]),
          };
        },
      );
    },
  );

  // ---- diff ----
  server.registerTool(
    'diff',
    {
      title: 'Versions between two environments',
      description:
        'What a promotion from one environment to the next would change: per application the source and target version (tag, digest, age), plus the applications that would be skipped and why.',
      inputSchema: z.object({
        namespace: nsArg,
        from: name('from'),
        to: name('to'),
        flow: name('flow').optional().describe('PromotionFlow; found from the stage transition when omitted'),
        ...filterArgs,
        ...candidateLimitArg,
        ...skippedLimitArg,
      }),
      outputSchema: z.object({
        namespace: z.string(),
        flow: z.string(),
        from: z.string(),
        to: z.string(),
        candidates: z.array(CandidateOut),
        candidatesTotal: z.number().int(),
        ...skippedOut,
      }),
      annotations: READ,
    },
    (args, extra: Extra) => {
      const ns = nsOf(args.namespace);
      return runTool(
        o,
        'diff',
        args,
        extra,
        { access: () => [{ verb: 'list', resource: 'applications', namespace: ns }] },
        async (caller) => {
          const d = await diff(ctx, caller, { ...args, namespace: ns });
          const candidates = withAges(ctx, ns, d.from, d.to, firstCandidates(d.candidates, args.candidateLimit));
          const candidatesTotal = d.candidates.length;
          return {
            data: { namespace: ns, ...d, candidates, candidatesTotal },
            text: `Flow ${d.flow}: ${candidateLines(d.from, d.to, candidates, d, candidatesTotal)}`,
          };
        },
      );
    },
  );

  // ---- state ----
  server.registerTool(
    'state',
    {
      title: 'Health and rollout state',
      description:
        'Health and rollout state of one Application (versions and health per environment, in pipeline order) or one PromotionPlan (phase, outcome, per-app progress; for a fleet plan the phase, clusters and counts of each wave, and which wave is current), with conditions and recent Kubernetes Events. Pass exactly one of application or plan.',
      inputSchema: z.object({
        namespace: nsArg,
        application: name('application').optional(),
        plan: name('plan').optional(),
      }),
      outputSchema: z.object({
        kind: z.enum(['Application', 'PromotionPlan']),
        namespace: z.string(),
        name: z.string(),
        application: AppOut.extend({ annotations: z.record(z.string(), z.string()) }).optional(),
        plan: PlanOut.optional(),
        conditions: z.array(ConditionOut),
        events: z.array(EventOut),
        eventsNote: z.string().optional(),
      }),
      annotations: READ,
    },
    (args, extra: Extra) => {
      const ns = nsOf(args.namespace);
      const isPlan = args.plan !== undefined;
      return runTool(
        o,
        'state',
        args,
        extra,
        {
          access: () =>
            isPlan || args.application
              ? [
                  {
                    verb: 'get',
                    resource: isPlan ? 'promotionplans' : 'applications',
                    namespace: ns,
                    name: args.plan ?? args.application,
                  },
                ]
              : [],
        },
        async (caller) => {
          if ((args.plan === undefined) === (args.application === undefined))
            throw new BadRequest('pass exactly one of application or plan');
          const notTrue = (cs: Array<{ type: string; status: string; reason?: string }>) =>
            cs
              .filter((c) => c.status !== 'True')
              .map((c) => `${c.type}=${c.status}${c.reason ? ` (${c.reason})` : ''}`);
          if (args.plan) {
            const [p, ev] = await Promise.all([
              getPlan(ctx, caller, ns, args.plan, { cached: true }),
              recentEvents(ctx, o, caller, ns, 'PromotionPlan', args.plan, extra.mcpReq.signal),
            ]);
            const v = planOut(p);
            const bad = notTrue(v.conditions);
            return {
              data: { kind: 'PromotionPlan', namespace: ns, name: args.plan, plan: v, conditions: v.conditions, ...ev },
              text: [
                planDetail(v),
                ...(bad.length ? [`conditions: ${bad.join(', ')}`] : []),
                `${ev.events.length} recent event(s)${ev.eventsNote ? ` (${ev.eventsNote})` : ''}`,
              ].join('\n'),
            };
          }
          const a = ctx.cache.getApplication(ns, args.application!);
          if (!a) throw new ApiError(404, `Application ${ns}/${args.application} not found`);
          const [view] = appsView(ctx, [a]);
          const ev = await recentEvents(ctx, o, caller, ns, 'Application', a.metadata.name, extra.mcpReq.signal);
          const conditions = conditionsOut(a.status?.conditions);
          const bad = notTrue(conditions);
          return {
            data: {
              kind: 'Application',
              namespace: ns,
              name: a.metadata.name,
              application: { ...view, annotations: redactMap(a.metadata.annotations) ?? {} },
              conditions,
              ...ev,
            },
            text: [
              appLine(view),
              ...view.versions
                .filter((x) => x.health !== 'Healthy' && x.message)
                .map((x) => `  ${x.environment}: ${x.health}: ${x.message}`),
              ...(bad.length ? [`conditions: ${bad.join(', ')}`] : []),
              `${ev.events.length} recent event(s)${ev.eventsNote ? ` (${ev.eventsNote})` : ''}`,
            ].join('\n'),
          };
        },
      );
    },
  );

  // ---- plan ----
  server.registerTool(
    'plan',
    {
      title: 'Create a PromotionPlan',
      description:
        'Computes the release candidates from one environment to the next (with the filters) and creates an unapproved PromotionPlan; nothing is promoted until `promote` approves it. dryRun returns the candidates without creating anything (always allowed; creation needs write mode).',
      inputSchema: z.object({
        namespace: nsArg,
        from: name('from'),
        to: name('to'),
        flow: name('flow').optional(),
        name: name('name').optional().describe('Plan name; generated when omitted'),
        dryRun: z.boolean().default(false),
        ...filterArgs,
        ...candidateLimitArg,
        ...skippedLimitArg,
      }),
      outputSchema: z.object({
        created: z.boolean(),
        namespace: z.string(),
        flow: z.string(),
        plan: PlanOut.optional(),
        candidates: z.array(CandidateOut),
        candidatesTotal: z.number().int(),
        ...skippedOut,
      }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args, extra: Extra) => {
      const ns = nsOf(args.namespace);
      return runTool(
        o,
        'plan',
        args,
        extra,
        {
          write: !args.dryRun,
          access: () => [
            args.dryRun
              ? { verb: 'list', resource: 'applications', namespace: ns }
              : { verb: 'create', resource: 'promotionplans', namespace: ns },
          ],
        },
        async (caller) => {
          if (args.dryRun) {
            const d = await diff(ctx, caller, { ...args, namespace: ns });
            const candidates = withAges(ctx, ns, d.from, d.to, firstCandidates(d.candidates, args.candidateLimit));
            const candidatesTotal = d.candidates.length;
            return {
              data: {
                created: false,
                namespace: ns,
                flow: d.flow,
                candidates,
                candidatesTotal,
                ...skippedSummaryOf(d),
              },
              text: `Dry run, nothing created. ${candidateLines(d.from, d.to, candidates, d, candidatesTotal)}`,
            };
          }
          const r = await createPlan(ctx, caller, { ...args, namespace: ns });
          const all = r.plan.spec.candidates;
          const candidates = withAges(
            ctx,
            ns,
            r.plan.spec.from,
            r.plan.spec.to,
            firstCandidates(all, args.candidateLimit),
          );
          const v = planOut(r.plan);
          return {
            data: {
              created: true,
              namespace: ns,
              flow: r.plan.spec.flow,
              plan: v,
              candidates,
              candidatesTotal: all.length,
              ...skippedSummaryOf(r),
            },
            text: `Created PromotionPlan ${ns}/${v.name} uid ${v.uid ?? '(none)'} (not approved: nothing changes until promote approves it with this uid). ${candidateLines(v.from, v.to, candidates, r, all.length)}`,
          };
        },
      );
    },
  );

  // ---- promote / rollback (destructive) ----

  /**
   * Confirmation by the user, asked only once the action is known to be possible: an
   * `input_required` elicitation on 2026-07-28 (served to 2025 clients by the SDK's shim as an
   * elicitation request) when the client can elicit; without that capability, write mode and RBAC
   * decide alone.
   */
  const confirm = (extra: Extra, message: string): InputRequiredResult | undefined => {
    const caps =
      ((extra.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as
        | ClientCapabilities
        | undefined) ?? server.server.getClientCapabilities();
    if (!caps?.elicitation) return undefined;
    const answer = inputResponse(extra.mcpReq.inputResponses, 'confirm');
    if (answer.kind === 'elicit') {
      if (answer.action === 'accept' && (answer.content as { confirm?: unknown } | undefined)?.confirm === true)
        return undefined;
      throw new Refused(
        `not confirmed by the user (${answer.action === 'accept' ? 'confirm was not true' : answer.action})`,
      );
    }
    return inputRequired({
      inputRequests: {
        confirm: inputRequired.elicit({
          message,
          requestedSchema: {
            type: 'object',
            properties: { confirm: { type: 'boolean', title: 'Confirm', description: 'Proceed with this change' } },
            required: ['confirm'],
          },
        }),
      },
    });
  };

  /** With a progressToken, follow the plan through the cache and stream its progress until it ends. */
  const follow = async (extra: ServerContext, p: PromotionPlan): Promise<FollowResult | undefined> => {
    if (extra.mcpReq._meta?.progressToken === undefined || !feed.live) return undefined;
    return followPlan(ctx, feed, extra, p.metadata.namespace ?? '', p.metadata.name, p.metadata.generation);
  };
  const followedText = (f: FollowResult | undefined) =>
    !f
      ? 'Follow progress with `state` (or call with a progressToken to have it streamed).'
      : f.end === 'finished'
        ? 'The plan has finished.'
        : f.end === 'waiting'
          ? 'The plan waits for its gate (approvals, freeze window or soak time); follow it with `state`.'
          : 'Stopped following after the time limit; the plan goes on. Follow it with `state`.';

  server.registerTool(
    'promote',
    {
      title: 'Approve a PromotionPlan (promote)',
      description:
        'Approves a PromotionPlan so the controller promotes its candidates to the target environment (copies images, changes workloads or commits to Git). Destructive. Refused unless the server runs in write mode and Kubernetes RBAC lets the caller approve into the target environment. Asks for confirmation when the client supports elicitation. With a progressToken, waits for the plan and streams per-application progress (copy, write, rollout, verdict); cancelling stops the waiting, not the plan.',
      inputSchema: z.object({
        namespace: nsArg,
        plan: name('plan'),
        // Optional in the schema only so that a call without it hears the operation's own refusal.
        uid: z
          .string()
          .max(64)
          .optional()
          .describe(
            'Required: uid of the plan you reviewed (from plan/list/state); if the plan was recreated since, the approval is refused',
          ),
      }),
      outputSchema: z.object({ plan: PlanOut }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    (args, extra: Extra) => {
      const ns = nsOf(args.namespace);
      return runTool(
        o,
        'promote',
        args,
        extra,
        // The approve/rollback verb for the target environment is checked (as the caller) before confirmation and by approvePlan.
        { write: true, access: () => [] },
        async (caller) => {
          const p = await getPlan(ctx, caller, ns, args.plan);
          // What approvePlan will check, asked before the person is asked to confirm.
          await checkApproval(ctx, caller, p, { uid: args.uid });
          const ask = confirm(
            extra,
            `Promote ${p.spec.candidates.length} application(s) from ${p.spec.from} to ${p.spec.to} (plan ${ns}/${args.plan})?`,
          );
          if (ask) return ask;
          // Bound to the plan the caller reviewed (and confirmed): a plan recreated meanwhile is a 409.
          const approved = await approvePlan(ctx, caller, ns, args.plan, { uid: args.uid });
          await extra.mcpReq
            .log('notice', { plan: `${ns}/${args.plan}`, event: 'approved', by: caller.username }, 'kpromo')
            .catch(() => undefined);
          const f = await follow(extra, approved);
          const v = planOut(f?.plan ?? approved);
          return {
            data: { plan: v },
            text: `Approved by ${who(caller)}. ${planDetail(v)}\n${followedText(f)}`,
          };
        },
      );
    },
  );

  server.registerTool(
    'continue_wave',
    {
      title: 'Continue a fleet plan with its next wave',
      description:
        "Lets the next wave of a fleet PromotionPlan (a plan into an Environment with clusters) start after a wave with pause: the controller then promotes that wave's clusters. Destructive. Refused unless the server runs in write mode and Kubernetes RBAC lets the caller continue plans into the target environment (verb continue). wave defaults to the wave that is Waiting; a later wave after a pause may be named to continue it ahead. Asks for confirmation when the client supports elicitation.",
      inputSchema: z.object({
        namespace: nsArg,
        plan: name('plan'),
        wave: z
          .string()
          .max(63)
          .optional()
          .describe('The wave to let start (status.waves[].name); default: the wave that is Waiting'),
        comment: z.string().max(1024).optional().describe('A note kept with the continuation'),
        uid: z
          .string()
          .max(64)
          .optional()
          .describe(
            'uid of the plan you reviewed (from list/state); if the plan was recreated since, the continuation is refused',
          ),
      }),
      outputSchema: z.object({ plan: PlanOut, wave: z.string().describe('The wave let start') }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    (args, extra: Extra) => {
      const ns = nsOf(args.namespace);
      return runTool(
        o,
        'continue_wave',
        args,
        extra,
        // The continue verb for the target environment is checked (as the caller) before confirmation and by continuePlan.
        { write: true, access: () => [] },
        async (caller) => {
          const p = await getPlan(ctx, caller, ns, args.plan);
          // What continuePlan will check, asked before the person is asked to confirm.
          const w = await checkContinue(ctx, caller, p, { wave: args.wave, uid: args.uid });
          const waves = p.status?.waves ?? [];
          const before = waves[waves.findIndex((x) => x.name === w.name) - 1];
          const what = isRollback(p)
            ? `roll back in ${p.spec.to}`
            : `promote ${p.spec.candidates.length} application(s) into ${p.spec.to}`;
          const ask = confirm(
            extra,
            `Let wave ${w.name} of plan ${ns}/${args.plan} start: ${what} on ${w.clusters.length} more cluster(s) (${w.clusters.join(', ')})?${before ? ` Wave ${before.name} is ${before.phase}${before.message ? `: ${before.message}` : ''}.` : ''}`,
          );
          if (ask) return ask;
          // Bound to the plan just shown (and confirmed), and to the wave confirmed.
          const continued = await continuePlan(ctx, caller, ns, args.plan, {
            wave: w.name,
            comment: args.comment,
            uid: args.uid ?? p.metadata.uid,
          });
          await extra.mcpReq
            .log(
              'notice',
              { plan: `${ns}/${args.plan}`, event: 'continued', wave: w.name, by: caller.username },
              'kpromo',
            )
            .catch(() => undefined);
          const v = planOut(continued);
          return {
            data: { plan: v, wave: w.name },
            text: `Wave ${w.name} continued by ${who(caller)}; the controller starts it on its next pass. ${planDetail(v)}\nFollow progress with \`state\`.`,
          };
        },
      );
    },
  );

  server.registerTool(
    'rollback',
    {
      title: 'Roll back a PromotionPlan',
      description:
        'Creates (and by default approves) a rollback PromotionPlan restoring the versions a completed plan replaced. Destructive. Refused unless the server runs in write mode and RBAC lets the caller create plans and roll back in the target environment. Asks for confirmation when the client supports elicitation. With a progressToken and approve, waits for the rollback and streams per-application progress; cancelling stops the waiting, not the rollback.',
      inputSchema: z.object({
        namespace: nsArg,
        plan: name('plan').describe('The plan to roll back'),
        // Optional in the schema only so that a call without it hears the operation's own refusal.
        uid: z
          .string()
          .max(64)
          .optional()
          .describe(
            'Required with approve: uid of the plan to roll back as you reviewed it (from plan/list/state); if the plan was recreated since, the rollback is refused',
          ),
        name: name('name')
          .optional()
          .describe('Name of the rollback plan (default: generated, <plan>-rollback-<random>, returned)'),
        approve: z.boolean().default(true).describe('Approve the rollback plan right away'),
      }),
      outputSchema: z.object({ plan: PlanOut }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    (args, extra: Extra) => {
      const ns = nsOf(args.namespace);
      return runTool(
        o,
        'rollback',
        args,
        extra,
        {
          write: true,
          // create + the rollback verb for the environment are checked (as the caller) before confirmation and by rollbackPlan.
          access: () => [],
        },
        async (caller) => {
          const orig = await getPlan(ctx, caller, ns, args.plan);
          // What rollbackPlan will check, asked before the person is asked to confirm.
          await checkRollback(ctx, caller, orig, { approve: args.approve, uid: args.uid });
          const ask = confirm(
            extra,
            `Roll back plan ${ns}/${args.plan} in ${orig.spec.to} to the versions it replaced?`,
          );
          if (ask) return ask;
          // Bound to the plan the caller reviewed (and confirmed): a plan recreated meanwhile is a 409.
          const p = await rollbackPlan(ctx, caller, ns, args.plan, {
            approve: args.approve,
            rollbackName: args.name,
            uid: args.uid,
          });
          await extra.mcpReq
            .log(
              'notice',
              {
                plan: `${ns}/${p.metadata.name}`,
                event: 'rollback created',
                rollbackOf: args.plan,
                by: caller.username,
              },
              'kpromo',
            )
            .catch(() => undefined);
          const f = args.approve ? await follow(extra, p) : undefined;
          const v = planOut(f?.plan ?? p);
          return {
            data: { plan: v },
            text: `Created rollback plan ${ns}/${v.name}${args.approve ? `, approved by ${who(caller)}` : ' (not approved: approve it with promote)'}. ${planDetail(v)}\n${args.approve ? followedText(f) : ''}`.trim(),
          };
        },
      );
    },
  );

  // ---- history / dora (read-only) ----
  registerHistoryTools(server, ctx, o);
  // ---- stop the line: line_stops (read), stop_line and resume_line (write, confirmed) ----
  registerLineStopTools(server, ctx, o, confirm);
  registerAdoptTools(server, ctx, o);
}

function withAges(
  ctx: ApiContext,
  ns: string,
  from: string,
  to: string,
  cands: Array<{ application: string; from: { tag: string; digest: string }; to?: { tag?: string; digest?: string } }>,
): z.infer<typeof CandidateOut>[] {
  const now = Date.now();
  const idx = arrivalIndex(ctx, ns);
  const age = (appName: string, env: string, v: { tag?: string; digest?: string }) => {
    const a = ctx.cache.getApplication(ns, appName);
    if (!a) return {};
    const out = versionOut(ctx, a, { environment: env, tag: v.tag, digest: v.digest, health: 'Unknown' }, now, idx);
    return {
      ...(out.since ? { since: out.since } : {}),
      ...(out.ageSeconds !== undefined ? { ageSeconds: out.ageSeconds } : {}),
    };
  };
  return cands.map((c) => ({
    application: c.application,
    from: { tag: c.from.tag, digest: c.from.digest, ...age(c.application, from, c.from) },
    ...(c.to
      ? {
          to: {
            ...(c.to.tag ? { tag: c.to.tag } : {}),
            ...(c.to.digest ? { digest: c.to.digest } : {}),
            ...age(c.application, to, c.to),
          },
        }
      : {}),
  }));
}

export { VersionOut };
