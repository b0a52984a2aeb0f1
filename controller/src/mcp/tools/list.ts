import { EnvironmentView } from '@kpromo/contract';
import { z } from 'zod';
import { type ApiContext, ApiError } from '../../api/context.js';
import { filterPlans, InvalidPlanContinue, pagePlans } from '../../api/planList.js';
import { findApplications, listEnvironments, listPlans } from '../../api/promotions.js';
import type { Caller } from '../../auth/identity.js';
import { globToRegExp } from '../../candidates/computeCandidates.js';
import { appLine, capped, planLine } from '../summary.js';
import { AppOut, appsView, fromContract, PlanOut, pipelineEnvironments, planOut, VersionOut } from '../views.js';
import { name, nsArg } from './args.js';
import { READ, row } from './row.js';

const DEFAULT_PAGE = 50;
const RESOURCE = { applications: 'applications', environments: 'environments', plans: 'promotionplans' } as const;

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
  throw new ApiError(400, 'invalid cursor: pass the nextCursor returned by the same list query, unchanged');
}

function page<T>(items: T[], args: { cursor?: string; pageSize?: number }, key: string) {
  const size = args.pageSize ?? DEFAULT_PAGE;
  const start = args.cursor ? decodeCursor(args.cursor, key) : 0;
  const slice = items.slice(start, start + size);
  const next = start + size < items.length ? encodeCursor(start + size, key) : undefined;
  return { slice, total: items.length, ...(next ? { nextCursor: next } : {}) };
}

const pageNote = (shown: number, total: number, next?: string) =>
  `${shown === total ? '' : `showing ${shown} of ${total}`}${next ? `${shown === total ? '' : '; '}more: pass nextCursor as cursor` : ''}`;

const input = z.object({
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
  health: VersionOut.shape.health
    .optional()
    .describe('Health in `environment`, or in any environment when none is given'),
  pageSize: z.number().int().min(1).max(200).optional().describe(`Items per page (default ${DEFAULT_PAGE})`),
  cursor: z.string().max(512).optional().describe('nextCursor from the previous page'),
});
type Args = z.output<typeof input>;

/** One page of a kind: the items, their total and cursor, and a line per item for the text. */
interface Page<T> {
  items: T[];
  total: number;
  nextCursor?: string;
  lines: string[];
}

async function environments(ctx: ApiContext, c: Caller, ns: string, a: Args) {
  const glob = a.name ? globToRegExp(a.name) : undefined;
  const order = pipelineEnvironments(ctx, ns).map((e) => e.metadata.name);
  const envs = (await listEnvironments(ctx, c, { namespace: ns }))
    .filter((e) => !glob || glob.test(e.name))
    .sort((x, y) => order.indexOf(x.name) - order.indexOf(y.name) || x.name.localeCompare(y.name));
  const p = page(envs, a, keyOf(a, ns));
  const lines = p.slice.map(
    (e) =>
      `  ${e.name}${e.tier ? ` (${e.tier})` : ''}: namespace ${e.targetNamespace}, registry ${e.registry}, delivery ${e.delivery}${(e.cooldowns ?? []).map((c) => `; flow ${c.flow} ${c.message}`).join('')}`,
  );
  return { items: p.slice, total: p.total, nextCursor: p.nextCursor, lines };
}

/**
 * The HTTP API's filter (environment: the plan's target) and paging (newest first, its continue
 * token as nextCursor), so both doors list the same plans the same way.
 */
async function plans(ctx: ApiContext, c: Caller, ns: string, a: Args) {
  const glob = a.name ? globToRegExp(a.name) : undefined;
  const named = (await listPlans(ctx, c, { namespace: ns })).filter((pl) => !glob || glob.test(pl.metadata.name));
  let p: ReturnType<typeof pagePlans>;
  try {
    p = pagePlans(filterPlans(named, { environment: a.environment }), {
      limit: a.pageSize ?? DEFAULT_PAGE,
      continue: a.cursor,
    });
  } catch (e) {
    if (e instanceof InvalidPlanContinue) throw new ApiError(400, `invalid cursor: ${e.message}`);
    throw e;
  }
  const items = p.items.map(planOut);
  return { items, total: p.total, nextCursor: p.continue, lines: items.map((x) => `  ${planLine(x)}`) };
}

async function applications(ctx: ApiContext, c: Caller, ns: string, a: Args) {
  if (a.environment && !ctx.cache.getEnvironment(ns, a.environment))
    throw new ApiError(404, `Environment "${a.environment}" not found in namespace ${ns}`);
  // The same authorised, filtered list GET /applications answers.
  const apps = (
    await findApplications(ctx, c, {
      namespace: ns,
      ...(a.name ? { applications: [a.name] } : {}),
      ...(a.team ? { teams: [a.team] } : {}),
      ...(a.labels ? { labelSelector: a.labels } : {}),
      ...(a.type ? { type: a.type } : {}),
    })
  ).sort((x, y) => x.metadata.name.localeCompare(y.metadata.name));
  // Health needs the versions of every app; otherwise only the page is rendered.
  const health = a.health;
  const p = health
    ? page(
        appsView(ctx, apps, a.environment).filter((v) => v.versions.some((x) => x.health === health)),
        a,
        keyOf(a, ns),
      )
    : (() => {
        const q = page(apps, a, keyOf(a, ns));
        return { ...q, slice: appsView(ctx, q.slice, a.environment) };
      })();
  return { items: p.slice, total: p.total, nextCursor: p.nextCursor, lines: p.slice.map((x) => `  ${appLine(x)}`) };
}

const keyOf = (a: Args, ns: string) => JSON.stringify({ ...a, cursor: undefined, pageSize: undefined, namespace: ns });

export const list = row({
  name: 'list',
  title: 'List applications, environments or promotion plans',
  description:
    'Lists kpromo Applications (with the version and health in every Environment, in pipeline order), Environments or PromotionPlans from the controller cache. Filters: environment, type, name glob, team, labels, health. Paginated: pass nextCursor back as cursor.',
  input,
  output: z.object({
    kind: z.string(),
    namespace: z.string(),
    total: z.number().int(),
    nextCursor: z.string().optional(),
    applications: z.array(AppOut).optional(),
    environments: z.array(fromContract(EnvironmentView)).optional(),
    plans: z.array(PlanOut).optional(),
  }),
  annotations: READ,
  async run({ ctx, caller, ns, args }) {
    await ctx.access.require(caller, { verb: 'list', resource: RESOURCE[args.kind], namespace: ns });
    const p: Page<unknown> = await { environments, plans, applications }[args.kind](ctx, caller, ns, args);
    const what = { applications: 'application(s)', environments: 'environment(s)', plans: 'plan(s)' }[args.kind];
    const order = args.kind === 'environments' ? ', in pipeline order' : '';
    return {
      data: {
        kind: args.kind,
        namespace: ns,
        total: p.total,
        ...(p.nextCursor ? { nextCursor: p.nextCursor } : {}),
        [args.kind]: p.items,
      },
      text: capped([
        `${p.total} ${what} in ${ns}${order} ${pageNote(p.items.length, p.total, p.nextCursor)}`.trim(),
        ...p.lines,
      ]),
    };
  },
});
