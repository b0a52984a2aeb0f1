import { Flex, Link, Text } from '@backstage/ui';
import {
  formatDuration,
  formatRelative,
  formatTime,
  PhaseBadge,
  type PhaseName,
  type PlanProgress,
  type PromotionPlan,
  planProgress,
  readableMessage,
  shortRef,
  useNow,
} from '@kpromo/plugin-promotions-react';
import type { ReactNode } from 'react';
import { usePromotionsLinks } from '../routes';

export interface TimelineEvent {
  /** ISO time; events without one (an approval the controller has not seen yet) come last. */
  at?: string;
  kind: 'created' | 'approved' | 'started' | 'app-started' | 'app-finished' | 'finished' | 'rollback';
  text: string;
  phase?: PhaseName;
  application?: string;
}

/**
 * A plan's history, oldest first: created (by whom), each approval (who, when the controller saw
 * it), started, every application's start and end (phase, attempts, why it failed), finished (with
 * the duration) and the rollback that undid it, if any. `g` is the plan's read model (the backend's,
 * else the contract's planProgress); the times come from status, which the read model leaves out.
 */
export function planTimeline(
  plan: PromotionPlan,
  rollback?: PromotionPlan,
  g: PlanProgress = planProgress(plan),
): TimelineEvent[] {
  const st = plan.status ?? {};
  const events: TimelineEvent[] = [];
  if (plan.metadata.creationTimestamp)
    events.push({
      at: plan.metadata.creationTimestamp,
      kind: 'created',
      text: `${g.isRollback ? `Rollback of ${plan.spec.rollbackOf}` : `Plan ${plan.spec.from} → ${plan.spec.to}`} created${g.requestedBy ? ` by ${g.requestedByAgent ? `agent ${g.requestedByAgent} for ` : ''}${g.requestedBy}` : ''}`,
    });
  for (const a of g.approvers)
    events.push({
      at: a.observedAt,
      kind: 'approved',
      text: `Approved by ${a.user}${a.person && a.person !== a.user ? ` as ${a.person}` : ''}${a.overrideFreeze ? `, overriding the freeze (“${a.overrideReason ?? 'no reason given'}”)` : ''}${a.observedAt ? '' : ' (not yet seen by the controller)'}${a.comment ? `: “${a.comment}”` : ''}`,
    });
  if (st.startedAt) events.push({ at: st.startedAt, kind: 'started', text: `Started in ${plan.spec.to}` });
  for (const a of st.apps ?? []) {
    if (a.startedAt)
      events.push({
        at: a.startedAt,
        kind: 'app-started',
        application: a.application,
        text: `${a.application}: ${g.isRollback ? 'restoring' : 'promoting'}${a.previous?.tag ? ` ${a.previous.tag}` : ''} → ${a.targetTag ?? '?'}`,
      });
    if (a.finishedAt)
      events.push({
        at: a.finishedAt,
        kind: 'app-finished',
        application: a.application,
        phase: a.phase,
        text: `${a.application}: ${a.phase}${a.startedAt ? ` after ${formatDuration(Date.parse(a.finishedAt) - Date.parse(a.startedAt))}` : ''}${a.attempts && a.attempts > 1 ? ` (${a.attempts} attempts)` : ''}${a.phase === 'Failed' && (a.reason || a.message) ? ` – ${[a.reason, a.message ? readableMessage(a.message) : ''].filter(Boolean).join(': ')}` : ''}`,
      });
  }
  if (st.completedAt)
    events.push({
      at: st.completedAt,
      kind: 'finished',
      phase: g.phase,
      text: `Finished ${g.phase}: ${g.succeeded} succeeded, ${g.failed} failed${st.startedAt ? `, took ${formatDuration(Date.parse(st.completedAt) - Date.parse(st.startedAt))}` : ''}`,
    });
  if (rollback)
    events.push({
      at: rollback.status?.completedAt ?? rollback.metadata.creationTimestamp,
      kind: 'rollback',
      phase: rollback.status?.phase,
      text: `Rolled back by ${rollback.metadata.name}${rollback.spec.requestedBy ? ` (${rollback.spec.requestedBy})` : ''}`,
    });
  const order: TimelineEvent['kind'][] = ['created', 'approved', 'started', 'app-started', 'app-finished', 'finished'];
  return events
    .map((e, i) => ({ e, i }))
    .sort((a, b) => {
      if (!a.e.at || !b.e.at) return (a.e.at ? 0 : 1) - (b.e.at ? 0 : 1) || a.i - b.i;
      return a.e.at.localeCompare(b.e.at) || order.indexOf(a.e.kind) - order.indexOf(b.e.kind) || a.i - b.i;
    })
    .map((x) => x.e);
}

const DOT: Record<TimelineEvent['kind'], string> = {
  created: '○',
  approved: '✓',
  started: '▶',
  'app-started': '·',
  'app-finished': '•',
  finished: '■',
  rollback: '↺',
};

/** The plan's timeline as an ordered list: time (absolute, and relative), what happened. */
export function PlanTimeline({
  plan,
  progress,
  rollback,
}: {
  plan: PromotionPlan;
  progress: PlanProgress;
  rollback?: PromotionPlan;
}) {
  const now = useNow(30_000);
  const links = usePromotionsLinks();
  const events = planTimeline(plan, rollback, progress);
  if (!events.length) return null;
  const text = (e: TimelineEvent): ReactNode => {
    if (e.kind === 'rollback' && rollback)
      return (
        <>
          Rolled back by{' '}
          <Link href={links.plan(rollback.metadata.namespace ?? 'default', rollback.metadata.name)}>
            {rollback.metadata.name}
          </Link>
          {rollback.spec.requestedBy ? ` (${shortRef(rollback.spec.requestedBy)})` : ''}
        </>
      );
    return e.text;
  };
  return (
    <Flex direction="column" gap="2">
      <Text as="h3" variant="title-small">
        Timeline
      </Text>
      <ol aria-label="Timeline" data-testid="timeline" style={{ margin: 0, paddingLeft: 0, listStyle: 'none' }}>
        {events.map((e, i) => (
          <li
            // biome-ignore lint/suspicious/noArrayIndexKey: events have no identity of their own
            key={i}
            data-kind={e.kind}
            style={{
              display: 'grid',
              gridTemplateColumns: '1.5em 15em 1fr',
              gap: 8,
              padding: '4px 0',
              borderBottom: '1px solid var(--bui-border, #ddd)',
              paddingLeft: e.kind.startsWith('app-') ? 16 : 0,
            }}
          >
            <span aria-hidden>{DOT[e.kind]}</span>
            <Text variant="body-small" color="secondary">
              {e.at ? (
                <time dateTime={e.at} title={formatRelative(e.at, now)}>
                  {formatTime(e.at)}
                </time>
              ) : (
                'pending'
              )}
            </Text>
            <span style={{ display: 'inline-flex', gap: 8, alignItems: 'center', flexWrap: 'wrap' }}>
              <Text variant="body-small">{text(e)}</Text>
              {e.phase && (e.kind === 'app-finished' || e.kind === 'finished' || e.kind === 'rollback') ? (
                <PhaseBadge
                  phase={e.phase}
                  action={e.kind === 'rollback' || progress.isRollback ? 'rollback' : 'promote'}
                />
              ) : null}
            </span>
          </li>
        ))}
      </ol>
    </Flex>
  );
}
