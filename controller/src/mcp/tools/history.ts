import {
  durationText as age,
  approvedByText,
  type DoraKeys,
  DoraQuery,
  DoraReport,
  HistoryEntry,
  HistoryQuery,
  MAX_DORA_WINDOW_DAYS,
  shortDigest,
} from '@kpromo/contract';
import { z } from 'zod';
import { doraInsights, listHistory } from '../../api/history.js';
import { parseInput } from '../../api/input.js';
import { fromContract } from '../views.js';
import { name, nsArg } from './args.js';
import { READ, row } from './row.js';

// history (what changed where, since when) and dora (the four keys): reads over api/history.ts,
// which reads only namespaces where the caller may list PromotionPlans.

const TIME_HELP =
  'a date (2026-12-01), an RFC 3339 date-time, a duration ago (30m, 12h, 7d, 2w), today, yesterday, or a weekday (monday: the most recent one; days are UTC)';

// The HTTP API's entry without what only its own clients need (the paging key, where it was read from).
const EntryOut = fromContract(HistoryEntry).omit({
  key: true,
  source: true,
  deployed: true,
  message: true,
  sourceEnvironment: true,
  rollbackOf: true,
});

const version = (v?: { tag?: string; digest?: string }) => v?.tag ?? shortDigest(v?.digest) ?? '?';

/** `2026-12-03T10:00:00Z stable checkout v1.1.0 → v1.2.0: Succeeded in 2m (plan p, approved by alice)`. */
export function historyLine(e: HistoryEntry): string {
  const what = e.action === 'rollback' ? `rollback to ${version(e.to)}` : `${version(e.from)} → ${version(e.to)}`;
  const took = e.durationSeconds !== undefined ? ` in ${age(e.durationSeconds)}` : '';
  const approved = approvedByText(e);
  const who = approved ? `, ${approved}` : '';
  const why = e.result === 'Failed' && e.reason ? ` (${e.reason})` : '';
  return `${e.finishedAt} ${e.namespace}/${e.environment} ${e.application} ${what}: ${e.result}${why}${took} (plan ${e.plan}${who})`;
}

/** `2.1/day, lead time 3h (5 known, 1 unknown), change failure rate 20% (1 of 5), time to restore 40m`. */
export function doraLine(k: DoraKeys): string {
  const lead =
    k.leadTime.medianSeconds !== undefined
      ? `${age(Math.round(k.leadTime.medianSeconds))} median over ${k.leadTime.samples}`
      : 'unknown';
  const unknown = k.leadTime.unknown ? `, ${k.leadTime.unknown} without image build time` : '';
  const cfr =
    k.changeFailureRate.ratio !== undefined
      ? `${Math.round(k.changeFailureRate.ratio * 100)}% (${k.changeFailureRate.failures} of ${k.deployments})`
      : 'no deployments';
  const ttr =
    k.timeToRestore.medianSeconds !== undefined
      ? `${age(Math.round(k.timeToRestore.medianSeconds))} median over ${k.timeToRestore.samples}`
      : 'none restored';
  const open = k.timeToRestore.unrestored ? `, ${k.timeToRestore.unrestored} not restored yet` : '';
  return `deployment frequency ${k.deploymentFrequency.perDay.toFixed(2)}/day (${k.deploymentFrequency.count}); lead time ${lead}${unknown}; change failure rate ${cfr}; time to restore ${ttr}${open}`;
}

const filters = {
  namespace: nsArg,
  application: name('application').optional(),
  environment: name('environment').optional().describe('Target environment, e.g. stable'),
  flow: name('flow').optional(),
  team: z.string().min(1).max(253).optional().describe('Owning team of the applications'),
};

export const history = row({
  name: 'history',
  title: 'Release history',
  description: `What changed, and who promoted it: promotions and rollbacks per application and environment, newest first: who approved, when, from → to version (tag, digest), duration, result. E.g. "what changed in stable since Monday?": environment=stable, since=monday. since/until: ${TIME_HELP}.`,
  input: z.object({
    ...filters,
    since: z.string().max(64).optional().describe('Entries that finished at or after this time'),
    until: z.string().max(64).optional().describe('Entries that finished before this time'),
    limit: z.number().int().min(1).max(200).default(50).describe('Most entries returned (newest first)'),
  }),
  // The newest `limit` only: an agent narrows the query rather than paging.
  contract: { schema: HistoryQuery, notOffered: ['continue'] },
  output: z.object({
    total: z.number().int(),
    truncated: z.boolean(),
    entries: z.array(EntryOut),
    warnings: z.array(z.string()).optional(),
  }),
  annotations: READ,
  async run({ ctx, caller, ns, args }) {
    // The contract parses the time expressions, as for GET /history.
    const { since, until } = parseInput(HistoryQuery.pick({ since: true, until: true }), args, 'arguments');
    const r = await listHistory(ctx, caller, { ...args, namespace: ns, since, until, limit: args.limit });
    const entries = r.items.map(
      ({ key: _k, source: _s, deployed: _d, message: _m, sourceEnvironment: _e, rollbackOf: _r, ...e }) => e,
    );
    const scope = [args.environment && `in ${args.environment}`, args.application, since && `since ${since}`]
      .filter(Boolean)
      .join(' ');
    return {
      data: { total: r.total, truncated: !!r.continue, entries, ...(r.warnings ? { warnings: r.warnings } : {}) },
      text: [
        `${r.total} promotion(s)/rollback(s)${scope ? ` ${scope}` : ''}${r.continue ? `, showing the newest ${r.items.length}` : ''}`,
        ...r.items.map((e) => `  ${historyLine(e)}`),
        ...(r.warnings ?? []).map((w) => `warning: ${w}`),
      ].join('\n'),
    };
  },
});

export const dora = row({
  name: 'dora',
  title: 'DORA four keys',
  description:
    'Deployment frequency, lead time for changes (image build → running in the environment), change failure rate (failed or rolled-back promotions) and time to restore (failure → next success), over a window, in total and per namespace, flow, team and environment. Lead time is unknown, not guessed, for images without a build time.',
  input: z.object({
    ...filters,
    windowDays: z
      .number()
      .int()
      .min(1)
      .max(MAX_DORA_WINDOW_DAYS)
      .default(30)
      .describe('Days the window covers, ending now'),
  }),
  // A number of days ending now, where the HTTP API takes "30d" and an end.
  contract: { schema: DoraQuery, mcpOnly: ['windowDays'], notOffered: ['window', 'until'] },
  output: fromContract(DoraReport),
  annotations: READ,
  async run({ ctx, caller, ns, args }) {
    const r = await doraInsights(ctx, caller, { ...args, namespace: ns, window: args.windowDays });
    return {
      data: r,
      text: [
        `Last ${r.window.days} day(s): ${doraLine(r.total)}`,
        ...r.groups.map(
          (g) => `  ${g.namespace}/${g.flow} ${g.team || '(no team)'} → ${g.environment}: ${doraLine(g)}`,
        ),
        ...(r.warnings ?? []).map((w) => `warning: ${w}`),
      ].join('\n'),
    };
  },
});
