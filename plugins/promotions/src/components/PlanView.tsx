import { useApi } from '@backstage/frontend-plugin-api';
import {
  Alert,
  Button,
  Cell,
  Column,
  Dialog,
  DialogBody,
  DialogFooter,
  DialogHeader,
  Flex,
  Row,
  TableBody,
  TableHeader,
  TableRoot,
  Text,
  TextField,
} from '@backstage/ui';
import {
  type AppProgress,
  ErrorState,
  isFinalPlan,
  LoadingState,
  PhaseBadge,
  type PlanProgress,
  type PromotionPlan,
  planProgress,
  planStarted,
  promotionPlanApprovePermission,
  promotionRollbackPermission,
  promotionsApiRef,
  useCurrentUser,
  useNow,
  usePromotionPermission,
  usePromotionsData,
} from '@kpromo/plugin-promotions-react';
import { useState } from 'react';
import { useNavigate } from 'react-router-dom';
import { usePromotionsLinks } from '../routes';

export interface PlanChange {
  application: string;
  from?: string;
  to?: string;
}

/** What approving the plan will change: per application, the target environment's version before and after. */
export function planChanges(plan: PromotionPlan): PlanChange[] {
  if ((plan.spec.action ?? 'promote') === 'rollback') {
    return (plan.status?.apps ?? []).map((a) => ({
      application: a.application,
      from: a.targetTag,
      to: a.previous?.tag ?? a.previous?.digest?.slice(0, 19),
    }));
  }
  return plan.spec.candidates.map((c) => ({
    application: c.application,
    from: c.to?.tag ?? c.to?.digest?.slice(0, 19),
    to: c.from.tag,
  }));
}

/** An ISO timestamp as `YYYY-MM-DD HH:MM:SS UTC`. */
export function formatTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** How long until `iso`: `in 2h 5m`, `in 3d 4h`, `in 40s`; `now` once it has passed. */
export function formatCountdown(iso: string, now: number): string {
  const s = Math.floor((Date.parse(iso) - now) / 1000);
  if (!Number.isFinite(s)) return '';
  if (s <= 0) return 'now';
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d) return `in ${d}d ${h}h`;
  if (h) return `in ${h}h ${m}m`;
  if (m) return `in ${m}m`;
  return `in ${s}s`;
}

/**
 * What the plan's gate says, for people: who asked for it, who approved and when, who still must
 * approve, the freeze window holding it (with a countdown) and when its candidates have soaked.
 */
function GateDetails({ g, started }: { g: PlanProgress; started: boolean }) {
  const now = useNow(1000);
  const frozen = g.frozen;
  const unseen = g.approvers.some((a) => !a.observedAt);
  return (
    <Flex direction="column" gap="2" data-testid="plan-gate">
      {g.requestedBy ? (
        <Text as="p" variant="body-small" data-testid="requested-by">
          Requested by {g.requestedBy}
        </Text>
      ) : null}
      {g.approvers.length ? (
        <ul data-testid="approvers" style={{ margin: 0, paddingLeft: 20 }}>
          {g.approvers.map((a) => (
            <li key={a.user}>
              <Text variant="body-small">
                Approved by <strong>{a.user}</strong>
                {a.observedAt ? ` at ${formatTime(a.observedAt)}` : ' (not yet seen by the controller)'}
                {a.overrideFreeze ? ' (overriding the freeze)' : ''}
                {a.counted === false ? ' (does not count toward the approval policy)' : ''}
                {a.comment ? ` – “${a.comment}”` : ''}
              </Text>
            </li>
          ))}
        </ul>
      ) : (
        <Text as="p" variant="body-small" color="secondary" data-testid="approvers">
          No approvals yet
        </Text>
      )}
      {!g.approved && (unseen || g.waitingFor) ? (
        <Text as="p" variant="body-small" data-testid="waiting-for">
          {/* status.gate predates the newest approval until the controller has looked again */}
          {unseen ? 'Waiting for the controller to evaluate the latest approval' : `Waiting for ${g.waitingFor}`}
        </Text>
      ) : null}
      {frozen && !started ? (
        <Alert
          status={frozen.overriddenBy ? 'info' : 'warning'}
          title={`${frozen.overriddenBy ? 'Freeze overridden' : 'Frozen'}: ${frozen.window}`}
          description={
            <span data-testid="freeze">
              {[
                frozen.reason,
                frozen.until
                  ? `until ${formatTime(frozen.until)} (${formatCountdown(frozen.until, now)})`
                  : 'no end set',
                frozen.overriddenBy ? `overridden by ${frozen.overriddenBy}` : undefined,
              ]
                .filter(Boolean)
                .join(' · ')}
            </span>
          }
        />
      ) : null}
      {g.eligibleAt && !started && Date.parse(g.eligibleAt) > now ? (
        <Text as="p" variant="body-small" data-testid="soak">
          Soaking in {g.from}: eligible at {formatTime(g.eligibleAt)} ({formatCountdown(g.eligibleAt, now)})
        </Text>
      ) : null}
    </Flex>
  );
}

function progressOf(plan: PromotionPlan, app: string): AppProgress | undefined {
  return plan.status?.apps?.find((a) => a.application === app);
}

function ChangeList({ plan }: { plan: PromotionPlan }) {
  const changes = planChanges(plan);
  if (!changes.length)
    return <Text as="p">The controller computes the versions to restore when the rollback starts.</Text>;
  return (
    <ul data-testid="change-list" style={{ margin: 0, paddingLeft: 20 }}>
      {changes.map((c) => (
        <li key={c.application}>
          <Text weight="bold">{c.application}</Text>: {c.from ?? 'not deployed'} → {c.to ?? '?'} in{' '}
          <Text weight="bold">{plan.spec.to}</Text>
        </li>
      ))}
    </ul>
  );
}

function ConfirmDialog(props: {
  isOpen: boolean;
  title: string;
  children: React.ReactNode;
  confirmLabel: string;
  destructive?: boolean;
  busy: boolean;
  error?: Error;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  return (
    <Dialog isOpen={props.isOpen} onOpenChange={(open) => !open && props.onCancel()} width={560}>
      <DialogHeader>{props.title}</DialogHeader>
      <DialogBody>
        <Flex direction="column" gap="3">
          {props.children}
          {props.error ? <Alert status="danger" title="The request failed" description={props.error.message} /> : null}
        </Flex>
      </DialogBody>
      <DialogFooter>
        <Button variant="secondary" onPress={props.onCancel}>
          Cancel
        </Button>
        <Button variant="primary" destructive={props.destructive} isPending={props.busy} onPress={props.onConfirm}>
          {props.confirmLabel}
        </Button>
      </DialogFooter>
    </Dialog>
  );
}

export function PlanDetails({ plan, onChange }: { plan: PromotionPlan; onChange: (p: PromotionPlan) => void }) {
  const api = useApi(promotionsApiRef);
  const navigate = useNavigate();
  const links = usePromotionsLinks();
  const ns = plan.metadata.namespace ?? 'default';
  const isRollback = (plan.spec.action ?? 'promote') === 'rollback';
  const apps = isRollback
    ? (plan.status?.apps ?? []).map((a) => a.application)
    : plan.spec.candidates.map((c) => c.application);
  const written = (plan.status?.apps ?? []).filter((a) => a.written).map((a) => a.application);
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
  const g = planProgress(plan);
  const started = planStarted(plan);
  const approvedByMe = !!me && g.approvers.some((a) => a.user === me);
  // Adding an approval helps only before the plan runs and while the policy is not met; the
  // controller answers 409 to a second approval by the same user.
  const canApprove = !started && !isFinalPlan(plan) && !g.approved && !approvedByMe;
  const frozenNow = !started && !isRollback && !!g.frozen && !g.frozen.overriddenBy;
  const [dialog, setDialog] = useState<'approve' | 'rollback' | 'override' | undefined>();
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>();
  const failed = (plan.status?.apps ?? []).filter((a) => a.phase === 'Failed');
  const canRollback =
    !isRollback &&
    isFinalPlan(plan) &&
    plan.status?.phase !== 'RolledBack' &&
    (plan.status?.apps ?? []).some((a) => a.written);

  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
      setDialog(undefined);
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Flex direction="column" gap="4">
      <Flex justify="between" align="start" style={{ flexWrap: 'wrap' }} gap="3">
        <Flex direction="column" gap="1">
          <Text as="h2" variant="title-medium">
            {plan.metadata.name}
          </Text>
          <Text as="p" color="secondary">
            {isRollback ? `Rollback of ${plan.spec.rollbackOf} in` : 'Promote'} {plan.spec.from} → {plan.spec.to} · flow{' '}
            {plan.spec.flow} · {g.approved ? 'approved' : 'waiting for approval'}
          </Text>
          <Flex gap="2" align="center">
            <span data-testid="plan-phase">
              <PhaseBadge phase={plan.status?.phase} />
            </span>
            <Text variant="body-small" color="secondary" data-testid="plan-counts">
              {plan.status?.succeeded ?? 0} succeeded · {plan.status?.failed ?? 0} failed · {apps.length} apps
            </Text>
            {!isFinalPlan(plan) && g.approved ? (
              <Text variant="body-small" color="secondary">
                updating live…
              </Text>
            ) : null}
          </Flex>
        </Flex>
        <Flex gap="2">
          {canApprove && approvePerm.allowed ? (
            <Button variant="primary" onPress={() => setDialog('approve')}>
              {isRollback ? 'Approve rollback' : 'Approve & promote'}
            </Button>
          ) : null}
          {frozenNow && !approvedByMe && approvePerm.allowed ? (
            <Button variant="secondary" destructive onPress={() => setDialog('override')}>
              Override freeze
            </Button>
          ) : null}
          {canRollback && rollbackPerm.allowed ? (
            <Button variant="secondary" destructive onPress={() => setDialog('rollback')}>
              Roll back
            </Button>
          ) : null}
        </Flex>
      </Flex>

      <GateDetails g={g} started={started} />

      {canApprove && !approvePerm.loading && !approvePerm.allowed ? (
        <Alert
          status="info"
          title="Waiting for approval"
          description="You do not have the promotion.plan.approve permission; ask a release approver of the owning team."
        />
      ) : null}
      {approvedByMe && !g.approved && !started ? (
        <Alert
          status="info"
          title="You approved this plan"
          description={`It starts once the approval policy is met${g.waitingFor && g.approvers.every((a) => a.observedAt) ? `: waiting for ${g.waitingFor}` : ''}.`}
        />
      ) : null}

      {failed.length ? (
        <Alert
          status="danger"
          title={`${failed.length} application${failed.length > 1 ? 's' : ''} failed`}
          description={
            <ul style={{ margin: 0, paddingLeft: 20 }} data-testid="failures">
              {failed.map((a) => (
                <li key={a.application}>
                  <strong>{a.application}</strong>: {a.reason ?? 'Failed'}
                  {a.message ? ` – ${a.message}` : ''}
                </li>
              ))}
            </ul>
          }
        />
      ) : null}

      {apps.length === 0 ? (
        <Text as="p" color="secondary">
          {isRollback
            ? 'The controller has not started this rollback yet; the applications appear here once it does.'
            : 'This plan has no candidates.'}
        </Text>
      ) : (
        <TableRoot aria-label="Plan applications">
          <TableHeader>
            <Column isRowHeader>Application</Column>
            <Column>{plan.spec.to} before</Column>
            <Column>{isRollback ? 'Restores' : `From ${plan.spec.from}`}</Column>
            <Column>Target tag</Column>
            <Column>Progress</Column>
            <Column>Details</Column>
          </TableHeader>
          <TableBody>
            {apps.map((app) => {
              const c = plan.spec.candidates.find((x) => x.application === app);
              const p = progressOf(plan, app);
              return (
                <Row key={app} id={app}>
                  <Cell>
                    <Text weight="bold">{app}</Text>
                  </Cell>
                  <Cell>
                    <Text variant="body-small">
                      {isRollback ? (p?.targetTag ?? '—') : (c?.to?.tag ?? p?.previous?.tag ?? 'not deployed')}
                    </Text>
                  </Cell>
                  <Cell>
                    <Text variant="body-small">{isRollback ? (p?.previous?.tag ?? '—') : (c?.from.tag ?? '—')}</Text>
                  </Cell>
                  <Cell>
                    <Text variant="body-small">{p?.targetTag ?? '—'}</Text>
                  </Cell>
                  <Cell>
                    <span data-testid={`phase-${app}`}>
                      <PhaseBadge phase={p?.phase ?? 'Pending'} />
                    </span>
                  </Cell>
                  <Cell>
                    <Text variant="body-small" color={p?.phase === 'Failed' ? 'danger' : 'secondary'}>
                      {[p?.reason, p?.message].filter(Boolean).join(': ') ||
                        (p?.attempts ? `attempt ${p.attempts}` : '')}
                    </Text>
                  </Cell>
                </Row>
              );
            })}
          </TableBody>
        </TableRoot>
      )}

      <ConfirmDialog
        isOpen={dialog === 'approve'}
        title={`Approve ${plan.metadata.name}?`}
        confirmLabel={isRollback ? 'Approve rollback' : `Promote to ${plan.spec.to}`}
        busy={busy}
        error={error}
        onCancel={() => {
          setDialog(undefined);
          setError(undefined);
        }}
        onConfirm={() => run(async () => onChange(await api.approvePlan(ns, plan.metadata.name)))}
      >
        <Text as="p">
          {g.waitingFor
            ? `Your approval is recorded as ${me ?? 'you'}; the plan starts once the policy is met (now waiting for ${g.waitingFor}). `
            : ''}
          The controller copies each image to the {plan.spec.to} registry and rolls it out. This changes:
        </Text>
        <ChangeList plan={plan} />
      </ConfirmDialog>

      <ConfirmDialog
        isOpen={dialog === 'override'}
        title={`Override the freeze of ${plan.spec.to}?`}
        confirmLabel="Approve despite the freeze"
        destructive
        busy={busy}
        error={error}
        onCancel={() => {
          setDialog(undefined);
          setError(undefined);
        }}
        onConfirm={() =>
          run(async () =>
            onChange(
              await api.approvePlan(ns, plan.metadata.name, {
                overrideFreeze: true,
                ...(reason.trim() ? { comment: reason.trim() } : {}),
              }),
            ),
          )
        }
      >
        <Text as="p">
          {plan.spec.to} is frozen by window {g.frozen?.window}
          {g.frozen?.reason ? ` (${g.frozen.reason})` : ''}. Approving with an override lets this plan run now; it needs
          the override-freeze permission for {plan.spec.to} and is recorded with your name. This changes:
        </Text>
        <ChangeList plan={plan} />
        <TextField label="Reason" placeholder="e.g. hotfix for INC-1234" value={reason} onChange={setReason} />
      </ConfirmDialog>

      <ConfirmDialog
        isOpen={dialog === 'rollback'}
        title={`Roll back ${plan.metadata.name}?`}
        confirmLabel="Roll back"
        destructive
        busy={busy}
        error={error}
        onCancel={() => {
          setDialog(undefined);
          setError(undefined);
        }}
        onConfirm={() =>
          run(async () => {
            const rb = await api.rollbackPlan(ns, plan.metadata.name, { approve: !!approvePerm.allowed });
            navigate(links.plan(rb.metadata.namespace ?? ns, rb.metadata.name));
          })
        }
      >
        <Text as="p">This creates a rollback plan restoring the versions {plan.spec.to} ran before:</Text>
        <ul data-testid="rollback-list" style={{ margin: 0, paddingLeft: 20 }}>
          {(plan.status?.apps ?? [])
            .filter((a) => a.written)
            .map((a) => (
              <li key={a.application}>
                <strong>{a.application}</strong>: {a.targetTag ?? '?'} → {a.previous?.tag ?? a.previous?.digest ?? '?'}
              </li>
            ))}
        </ul>
        {!approvePerm.allowed ? (
          <Text as="p" variant="body-small">
            You cannot approve; the rollback plan waits for an approver.
          </Text>
        ) : null}
      </ConfirmDialog>
    </Flex>
  );
}

/** A plan with live per-application progress (polls until the plan is final). */
export function PlanView({ namespace, name, pollMs = 2000 }: { namespace: string; name: string; pollMs?: number }) {
  const [override, setOverride] = useState<PromotionPlan | undefined>();
  const data = usePromotionsData((api) => api.getPlan(namespace, name), [namespace, name, override], {
    pollMs,
    stop: (p) => isFinalPlan(p),
  });
  const plan = data.value ?? override;
  if (!plan && data.loading) return <LoadingState label="Loading plan" />;
  if (!plan && data.error)
    return <ErrorState error={data.error} onRetry={data.retry} title="Could not load the plan" />;
  if (!plan) return null;
  return (
    <Flex direction="column" gap="3">
      {data.error ? <ErrorState error={data.error} onRetry={data.retry} title="Live update failed" /> : null}
      <PlanDetails plan={plan} onChange={setOverride} />
    </Flex>
  );
}
