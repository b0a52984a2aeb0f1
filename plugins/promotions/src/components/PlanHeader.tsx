import { Button, Flex, Link, Text } from '@backstage/ui';
import {
  formatRelative,
  formatTime,
  PhaseBadge,
  type PlanProgress,
  type PromotionPlan,
} from '@kpromo/plugin-promotions-react';
import { usePromotionsLinks } from '../routes';

/** The confirmation dialogs of the plan page; the header's buttons open them. */
export type PlanDialog = 'approve' | 'rollback' | 'override';

/**
 * The plan's name, what it does, its phase and counts, and the buttons of the actions the user may
 * take now (`actions`); a plan rolled back already links its rollback instead.
 */
export function PlanHeader({
  plan,
  g,
  appCount,
  now,
  existingRollback,
  actions,
  onOpen,
}: {
  plan: PromotionPlan;
  g: PlanProgress;
  appCount: number;
  now: number;
  existingRollback?: PromotionPlan;
  actions: Record<PlanDialog, boolean>;
  onOpen: (dialog: PlanDialog) => void;
}) {
  const links = usePromotionsLinks();
  const ns = plan.metadata.namespace ?? 'default';
  const isRollback = g.isRollback;
  const final = g.done;
  const subtitle = isRollback ? (
    <>
      Rollback of{' '}
      {plan.spec.rollbackOf ? <Link href={links.plan(ns, plan.spec.rollbackOf)}>{plan.spec.rollbackOf}</Link> : '?'} in{' '}
      {plan.spec.to} · flow {plan.spec.flow} · {g.approved ? 'approved' : 'waiting for approval'}
    </>
  ) : (
    <>
      Promote {plan.spec.from} → {plan.spec.to} · flow {plan.spec.flow} ·{' '}
      {g.approved ? 'approved' : 'waiting for approval'}
    </>
  );

  return (
    <Flex justify="between" align="start" style={{ flexWrap: 'wrap' }} gap="3">
      <Flex direction="column" gap="1">
        <Text as="h2" variant="title-medium">
          {plan.metadata.name}
        </Text>
        <Text as="p" color="secondary" data-testid="plan-subtitle">
          {subtitle}
        </Text>
        <Flex gap="2" align="center" style={{ flexWrap: 'wrap' }}>
          <span data-testid="plan-phase">
            <PhaseBadge phase={g.phase} action={g.action} />
          </span>
          <Text variant="body-small" color="secondary" data-testid="plan-counts">
            {g.succeeded} succeeded · {g.failed} failed · {appCount} apps
          </Text>
          {plan.metadata.creationTimestamp ? (
            <Text variant="body-small" color="secondary">
              · created{' '}
              <time dateTime={plan.metadata.creationTimestamp} title={formatTime(plan.metadata.creationTimestamp)}>
                {formatRelative(plan.metadata.creationTimestamp, now)}
              </time>
            </Text>
          ) : null}
          {!final && g.approved ? (
            <Text variant="body-small" color="secondary">
              · updating live
            </Text>
          ) : null}
        </Flex>
      </Flex>
      <Flex gap="2" align="center">
        {actions.approve ? (
          <Button variant="primary" onPress={() => onOpen('approve')}>
            {isRollback ? 'Approve rollback' : 'Approve & promote'}
          </Button>
        ) : null}
        {/* Triggers are neutral (Backstage UI's red secondary button is below AA contrast); the
            confirmation dialogs carry the destructive styling. */}
        {actions.override ? (
          <Button variant="secondary" onPress={() => onOpen('override')}>
            Override freeze
          </Button>
        ) : null}
        {existingRollback ? (
          <Text variant="body-small" data-testid="existing-rollback">
            Rolled back by{' '}
            <Link href={links.plan(ns, existingRollback.metadata.name)}>{existingRollback.metadata.name}</Link>{' '}
            <PhaseBadge phase={existingRollback.status?.phase} action="rollback" />
          </Text>
        ) : actions.rollback ? (
          <Button variant="secondary" onPress={() => onOpen('rollback')}>
            Roll back
          </Button>
        ) : null}
      </Flex>
    </Flex>
  );
}
