import { isRollback, isTerminalPlan, type PromotionPlan } from '@kpromo/api';
import { affectedApplications, globMatcher, type ListResponse, PatternError, type PlansQuery } from '@kpromo/contract';
import type { Caller } from '../auth/identity.js';
import { type ApiContext, ApiError } from './context.js';
import { listPlans } from './promotions.js';

// GET /plans: the plans the caller may list, filtered and paged on the server, newest first.

const actionOf = (p: PromotionPlan) => (isRollback(p) ? 'rollback' : 'promote');

/** Pure: the plans matching every filter of the query (paging aside). Throws PatternError for a bad glob. */
export function filterPlans(
  plans: readonly PromotionPlan[],
  q: Omit<PlansQuery, 'limit' | 'continue'>,
): PromotionPlan[] {
  const app = q.application ? globMatcher(q.application, 'application') : undefined;
  const who = q.requestedBy?.toLowerCase();
  return plans.filter(
    (p) =>
      (!q.flow || p.spec.flow === q.flow) &&
      (!q.environment || p.spec.to === q.environment) &&
      (!q.action || actionOf(p) === q.action) &&
      (!q.phase || (q.phase === 'active' ? !isTerminalPlan(p) : (p.status?.phase ?? 'Pending') === q.phase)) &&
      (!app || affectedApplications(p).some((a) => app.test(a))) &&
      (!who || (p.spec.requestedBy ?? '').toLowerCase().includes(who)),
  );
}

type Key = [created: string, namespace: string, name: string];
const keyOf = (p: PromotionPlan): Key => [
  p.metadata.creationTimestamp ?? '',
  p.metadata.namespace ?? '',
  p.metadata.name,
];
/** Newest first; plans created in the same second by namespace and name. */
export function comparePlans(a: Key, b: Key): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? 1 : -1;
  if (a[1] !== b[1]) return a[1] < b[1] ? -1 : 1;
  return a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0;
}

export class InvalidPlanContinue extends Error {}

const encode = (k: Key) => Buffer.from(JSON.stringify(k)).toString('base64url');
function decode(token: string): Key {
  try {
    const k = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (Array.isArray(k) && k.length === 3 && k.every((x) => typeof x === 'string')) return k as Key;
  } catch {
    // the error below
  }
  throw new InvalidPlanContinue('continue: is not a token this API returned; start again without it');
}

/**
 * Pure: the plans in order (newest first) and, with `limit` or `continue`, the page after the
 * `continue` token: a position in the order, so plans created or deleted between pages neither
 * repeat nor shift the rest.
 */
export function pagePlans(
  plans: readonly PromotionPlan[],
  page: { limit?: number; continue?: string },
): ListResponse<PromotionPlan> & { total: number } {
  const sorted = [...plans].sort((a, b) => comparePlans(keyOf(a), keyOf(b)));
  if (page.limit === undefined && !page.continue) return { items: sorted, total: sorted.length };
  const after = page.continue ? decode(page.continue) : undefined;
  const start = after ? sorted.findIndex((p) => comparePlans(keyOf(p), after) > 0) : 0;
  const from = start < 0 ? sorted.length : start;
  const items = sorted.slice(from, from + (page.limit ?? sorted.length));
  const more = from + items.length < sorted.length;
  return {
    items,
    ...(more && items.length ? { continue: encode(keyOf(items[items.length - 1])) } : {}),
    total: sorted.length,
  };
}

/** GET /plans: the plans the caller may list (RBAC list per namespace), filtered, newest first, paged. */
export async function listPlansPage(
  ctx: ApiContext,
  caller: Caller,
  q: PlansQuery = {},
): Promise<ListResponse<PromotionPlan>> {
  const plans = await listPlans(ctx, caller, { namespace: q.namespace });
  try {
    return pagePlans(filterPlans(plans, q), q);
  } catch (e) {
    if (e instanceof InvalidPlanContinue || e instanceof PatternError)
      throw new ApiError(400, `invalid query: ${e.message}`);
    throw e;
  }
}
