import { Flex, Link } from '@backstage/ui';
import {
  type ApplicationSummary,
  EmptyState,
  ErrorState,
  isFleetPlan,
  isNotFound,
  LiveAnnouncer,
  LoadingState,
  type PlanProgress,
  type PlanDetails as PlanWithProgress,
  type PromotionPlan,
  planProgress,
  planStarted,
  promotionPlanApprovePermission,
  promotionRollbackPermission,
  useCurrentUser,
  useNow,
  usePageTitle,
  usePromotionPermission,
  usePromotionsData,
} from '@kpromo/plugin-promotions-react';
import { useEffect, useState } from 'react';
import { usePromotionsLinks } from '../routes';
import { PlanAlerts } from './PlanAlerts';
import { PlanApps } from './PlanApps';
import { PlanDialogs } from './PlanDialogs';
import { GateDetails } from './PlanGate';
import { type PlanDialog, PlanHeader } from './PlanHeader';
import { PlanPullRequest } from './PlanPullRequest';
import { PlanTimeline } from './PlanTimeline';
import { PlanWaves } from './PlanWaves';
import { planChanges, progressAnnouncement, rollbackOf } from './planModel';

export { formatCountdown, formatTime } from '@kpromo/plugin-promotions-react';
export type { PlanChange } from './Confirm';
export { planChanges, progressAnnouncement, rollbackOf } from './planModel';

/**
 * One plan, for people: what it does and its actions, its gate, the pull request it promotes
 * through, what holds it or failed, its applications (and a fleet plan's waves), its timeline, and
 * the confirmations of its actions.
 */
export function PlanDetails({
  plan,
  progress,
  onChange,
  plans,
  applications,
  gitRepository,
}: {
  plan: PromotionPlan;
  /** The plan's read model as the backend sent it with the plan; without it, projected here (planProgress). */
  progress?: PlanProgress;
  /** What an action on the plan answered: the plan and its progress. */
  onChange: (p: PlanWithProgress) => void;
  /** The namespace's plans: the rollback of this plan, or the plan this one rolls back. */
  plans?: PromotionPlan[];
  /** For links to the applications' catalog entities. */
  applications?: ApplicationSummary[];
  /** The GitOps repository of the target environment, for links to the commits delivery wrote. */
  gitRepository?: string;
}) {
  const now = useNow(30_000);
  const ns = plan.metadata.namespace ?? 'default';
  const sent = progress ?? planProgress(plan);
  const original = sent.isRollback ? plans?.find((p) => p.metadata.name === plan.spec.rollbackOf) : undefined;
  // What a rollback not started yet restores follows from the plan it rolls back, which the backend
  // does not look up for its answer: with that plan at hand, the read model is projected with it.
  const g = original && !sent.total ? planProgress(plan, { rollbackOf: original }) : sent;
  // The plan rolled back is one of the list, which comes without progress.
  const originalProgress = original ? planProgress(original) : undefined;
  const isRollback = g.isRollback;
  const existingRollback = isRollback ? undefined : rollbackOf(plan, plans);
  const changes = planChanges(plan, original);
  const apps = g.affectedApplications;
  const written = g.apps.filter((a) => a.written).map((a) => a.application);
  // approve/rollback are checked per application against its catalog entity (as the backend does)
  const approvePerm = usePromotionPermission(promotionPlanApprovePermission, {
    namespace: ns,
    applications: plan.spec.candidates.map((c) => c.application),
  });
  const rollbackPerm = usePromotionPermission(promotionRollbackPermission, {
    namespace: ns,
    applications: written.length ? written : plan.spec.candidates.map((c) => c.application),
  });
  const me = useCurrentUser();
  const started = planStarted(plan);
  const final = g.done;
  const approvedByMe = !!me && g.approvers.some((a) => a.user === me);
  // Adding an approval helps only before the plan runs and while the policy is not met; the
  // controller answers 409 to a second approval by the same user.
  const canApprove = !started && !final && !g.approved && !approvedByMe;
  const frozenNow = !started && !isRollback && !!g.frozen && !g.frozen.overriddenBy;
  const canRollback = !isRollback && final && g.phase !== 'RolledBack' && written.length > 0;
  const [dialog, setDialog] = useState<PlanDialog | undefined>();

  return (
    <Flex direction="column" gap="4">
      <LiveAnnouncer message={progressAnnouncement(g)} testId="plan-announcer" />
      <PlanHeader
        plan={plan}
        g={g}
        appCount={apps.length}
        now={now}
        existingRollback={existingRollback}
        actions={{
          approve: canApprove && approvePerm.allowed,
          override: frozenNow && !approvedByMe && approvePerm.allowed,
          rollback: canRollback && rollbackPerm.allowed,
        }}
        onOpen={setDialog}
      />

      <GateDetails g={g} started={started} />

      {g.pullRequest ? <PlanPullRequest pr={g.pullRequest} /> : null}

      <PlanAlerts
        plan={plan}
        g={g}
        originalProgress={originalProgress}
        started={started}
        final={final}
        approval={{ canApprove, approvedByMe, permission: approvePerm }}
      />

      <PlanApps
        plan={plan}
        g={g}
        apps={apps}
        originalProgress={originalProgress}
        applications={applications}
        gitRepository={gitRepository}
        now={now}
      />

      {/* A fleet plan: its waves and every application in every cluster; nothing for one cluster. */}
      {isFleetPlan(g) ? <PlanWaves plan={plan} progress={g} applications={apps} onChange={onChange} /> : null}

      <PlanTimeline plan={plan} progress={g} rollback={existingRollback} />

      <PlanDialogs
        plan={plan}
        g={g}
        me={me}
        changes={changes}
        mayApprove={approvePerm.allowed}
        dialog={dialog}
        onClose={() => setDialog(undefined)}
        onChange={onChange}
      />
    </Flex>
  );
}

/** Polling while a plan runs; once final, slower: a rollback from elsewhere still shows up. */
const SLOW_POLL_MS = 15_000;

/**
 * A plan with live per-application progress: polled every `pollMs` while it runs, every
 * `slowPollMs` once final, and at once when the window regains focus.
 */
export function PlanView({
  namespace,
  name,
  pollMs = 2000,
  slowPollMs = SLOW_POLL_MS,
}: {
  namespace: string;
  name: string;
  pollMs?: number;
  slowPollMs?: number;
}) {
  const links = usePromotionsLinks();
  usePageTitle(`${name} · Plans`);
  // What an approve answered, shown until a poll brings something newer than what was shown then.
  const [override, setOverride] = useState<{ details: PlanWithProgress; shownRv?: string } | undefined>();
  const data = usePromotionsData(
    async (api) => {
      const [details, plans] = await Promise.all([
        api.getPlan(namespace, name),
        api.listPlans({ namespace }).catch(() => undefined),
      ]);
      return { details, plans };
    },
    [namespace, name],
    { pollMs, slowPollMs, stop: (v) => v.details.progress.done },
  );
  const apps = usePromotionsData((api) => api.listApplications({ namespace }), [namespace]);
  const envs = usePromotionsData((api) => api.listEnvironments({ namespace }), [namespace]);
  const current = data.value?.details.plan;
  useEffect(() => {
    if (override && current && current.metadata.resourceVersion !== override.shownRv) setOverride(undefined);
  }, [current, override]);

  if (!current && data.loading) return <LoadingState label="Loading plan" />;
  if (!current && data.error && isNotFound(data.error))
    return (
      <EmptyState title={`Plan ${name} not found`}>
        There is no promotion plan {name} in namespace {namespace}: it may have been deleted, or the link is wrong.{' '}
        <Link href={links.plans()}>Back to all plans</Link>
      </EmptyState>
    );
  if (!current && data.error)
    return (
      <ErrorState
        error={data.error}
        onRetry={data.retry}
        title="Could not load the plan"
        back={<Link href={links.plans()}>Back to all plans</Link>}
      />
    );
  if (!current) return null;
  const shown =
    override && current.metadata.resourceVersion === override.shownRv ? override.details : data.value!.details;
  const plan = shown.plan;
  return (
    <Flex direction="column" gap="3">
      {data.error ? <ErrorState error={data.error} onRetry={data.retry} title="Live update failed" /> : null}
      <PlanDetails
        plan={plan}
        progress={shown.progress}
        plans={data.value?.plans}
        applications={apps.value}
        gitRepository={envs.value?.find((e) => e.name === plan.spec.to)?.gitRepository}
        onChange={(details) => {
          setOverride({ details, shownRv: current.metadata.resourceVersion });
          data.retry();
        }}
      />
    </Flex>
  );
}
