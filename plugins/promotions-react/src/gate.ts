import { configApiRef, identityApiRef, useApi } from '@backstage/frontend-plugin-api';
import { planHold as heldBy, type PlanHold, type PlanProgress } from '@kpromo/plugin-promotions-common';
import { useEffect, useState } from 'react';
import type { PromotionPlan } from './types';

/** Whether the controller has started the plan (any app past Pending, or the plan past Pending). */
export function planStarted(plan: PromotionPlan): boolean {
  const st = plan.status;
  if (!st) return false;
  if (st.phase && st.phase !== 'Pending') return true;
  return !!st.startedAt || (st.apps ?? []).some((a) => a.phase !== 'Pending');
}

/** The contract's holds in the words the portal shows. */
const HOLD_WORDS = { frozen: 'frozen', 'awaiting-approval': 'awaiting approval', soaking: 'soaking' } as const;

/**
 * Why a plan that has not started waits, from the read model's gate, in the contract's order (as the
 * CLI and MCP say it): a freeze window, then missing approvals, then soak; undefined once it runs.
 */
export function planHold(
  plan: PromotionPlan,
  progress: Pick<PlanProgress, 'frozen' | 'approved' | 'eligibleAt'>,
  now = Date.now(),
): (typeof HOLD_WORDS)[PlanHold] | undefined {
  if (planStarted(plan)) return undefined;
  const h = heldBy(progress, now);
  return h && HOLD_WORDS[h];
}

/** The signed-in user's entity ref (undefined while loading, or if the identity is unavailable). */
export function useCurrentUser(): string | undefined {
  const identity = useApi(identityApiRef);
  const [user, setUser] = useState<string | undefined>();
  useEffect(() => {
    let cancelled = false;
    identity
      .getBackstageIdentity()
      .then((i) => !cancelled && setUser(i.userEntityRef))
      .catch(() => undefined);
    return () => {
      cancelled = true;
    };
  }, [identity]);
  return user;
}

/** The current time, refreshed every `ms` (for countdowns). */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

/**
 * Sets the browser tab's title to `<title> | <app title>` while the page is shown, so every page
 * (and the history list) says what it is.
 */
export function usePageTitle(title: string | undefined): void {
  const config = useApi(configApiRef);
  const app = config.getOptionalString('app.title') ?? 'Backstage';
  useEffect(() => {
    if (!title || typeof document === 'undefined') return;
    document.title = `${title} | ${app}`;
  }, [title, app]);
}
