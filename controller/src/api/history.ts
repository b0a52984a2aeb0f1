import type { DoraQuery, DoraReport, HistoryEntry, HistoryList, HistoryQuery } from '@kpromo/contract';
import type { Caller } from '../auth/identity.js';
import { doraGroups, doraKeys } from '../history/dora.js';
import { entriesOfPlan } from '../history/fromPlans.js';
import { filterHistory, InvalidContinue, mergeHistory, pageHistory } from '../history/query.js';
import { historyStore } from '../history/store.js';
import { KubeError } from '../kube/rest.js';
import { type ApiContext, ApiError } from './context.js';

const DEFAULT_PAGE = 100;
const DEFAULT_WINDOW_DAYS = 30;

/**
 * Namespaces whose history the caller may read: where they may list PromotionPlans (the history is
 * the plans' journal). A namespace the caller names must be readable (403 otherwise); without one,
 * every namespace the controller knows of that the caller may read.
 */
async function readableNamespaces(ctx: ApiContext, caller: Caller, namespace?: string): Promise<string[]> {
  if (namespace) {
    await ctx.access.require(caller, { verb: 'list', resource: 'promotionplans', namespace });
    return [namespace];
  }
  const known = new Set([
    ...ctx.cache.environments().map((e) => e.metadata.namespace ?? ''),
    ...ctx.cache.plans().map((p) => p.metadata.namespace ?? ''),
  ]);
  return ctx.access.listable(caller, 'promotionplans', [...known].filter(Boolean).sort(), (n) => n);
}

/**
 * The history of the readable namespaces: the log (ConfigMaps, read as the controller) merged with
 * the entries of plans still in the cache. A namespace whose log cannot be read still has its plans,
 * and a warning says so.
 */
export async function readableHistory(
  ctx: ApiContext,
  caller: Caller,
  namespace?: string,
): Promise<{ entries: HistoryEntry[]; warnings: string[] }> {
  const store = historyStore(ctx.control);
  const warnings: string[] = [];
  const entries: HistoryEntry[] = [];
  for (const ns of await readableNamespaces(ctx, caller, namespace)) {
    const logged = await store.read(ns).catch((e: unknown) => {
      const why = e instanceof KubeError ? `HTTP ${e.status}` : (e as Error).message;
      warnings.push(`release history log of namespace ${ns} not read (${why}); showing the plans that still exist`);
      return [];
    });
    const live = ctx.cache
      .plans(ns)
      .flatMap((p) => entriesOfPlan(p, { teamOf: (app) => ctx.cache.getApplication(ns, app)?.spec.owner }));
    entries.push(...mergeHistory(logged, live));
  }
  return { entries, warnings };
}

/** GET /history: one page, newest first. */
export async function listHistory(ctx: ApiContext, caller: Caller, q: HistoryQuery = {}): Promise<HistoryList> {
  const { entries, warnings } = await readableHistory(ctx, caller, q.namespace);
  try {
    const page = pageHistory(filterHistory(entries, q), q.limit ?? DEFAULT_PAGE, q.continue);
    return { ...page, ...(warnings.length ? { warnings } : {}) };
  } catch (e) {
    if (e instanceof InvalidContinue) throw new ApiError(400, `invalid query: ${e.message}`);
    throw e;
  }
}

/** GET /insights/dora: the four keys over the window, in total and per namespace, flow, team and environment. */
export async function doraInsights(ctx: ApiContext, caller: Caller, q: DoraQuery = {}): Promise<DoraReport> {
  const until = q.until ? new Date(q.until) : new Date();
  const days = q.window ?? DEFAULT_WINDOW_DAYS;
  const window = { since: new Date(until.getTime() - days * 86_400_000), until };
  const { entries, warnings } = await readableHistory(ctx, caller, q.namespace);
  // Only the window's end bounds the successors of failures: a restore after `until` is not known yet at `until`.
  const matching = filterHistory(entries, { ...q, since: undefined, until: until.toISOString() });
  return {
    window: { since: window.since.toISOString(), until: until.toISOString(), days },
    total: doraKeys(matching, window),
    groups: doraGroups(matching, window),
    ...(warnings.length ? { warnings } : {}),
  };
}
