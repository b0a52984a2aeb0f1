import { Alert, Link, Text } from '@backstage/ui';
import { type PlanProgress, type PromotionPlan, readableMessage } from '@kpromo/plugin-promotions-react';
import { usePromotionsLinks } from '../routes';

/**
 * What holds or went wrong with the plan, above its applications: a stopped line, rollbacks the
 * controller started (or, on a rollback, the failed check that started it), why the user cannot or
 * need not approve, and the applications that failed.
 */
export function PlanAlerts({
  plan,
  g,
  originalProgress,
  started,
  final,
  approval,
}: {
  plan: PromotionPlan;
  g: PlanProgress;
  /** The read model of the plan a rollback rolls back. */
  originalProgress?: PlanProgress;
  started: boolean;
  final: boolean;
  approval: { canApprove: boolean; approvedByMe: boolean; permission: { loading: boolean; allowed: boolean } };
}) {
  const links = usePromotionsLinks();
  const ns = plan.metadata.namespace ?? 'default';
  const lineStop = g.lineStopped;
  const automaticRollbacks = g.automaticRollbacks;
  // A rollback the controller started because a check failed: the original plan records it.
  const cause = originalProgress?.automaticRollbacks.find((r) => !!r.planUID && r.planUID === plan.metadata.uid);
  const failed = g.apps.filter((a) => a.phase === 'Failed');
  // Org-level gates stricter than the flow's stage: they decide, and the flow is not changed.
  const orgRules = (g.orgRules ?? []).filter((r) => r.stricter);
  const { canApprove, approvedByMe, permission } = approval;
  return (
    <>
      {lineStop && !lineStop.overriddenBy && !final ? (
        <div data-testid="line-stopped">
          <Alert
            status="warning"
            title="The line is stopped"
            description={`${lineStop.stoppedBy ?? 'Someone'} stopped the line (LineStop ${lineStop.lineStop}): ${lineStop.reason}. ${started ? 'Apps not started yet wait' : 'The plan waits'} until it is lifted; rollbacks and hotfixes approved with override-freeze still pass.`}
          />
        </div>
      ) : null}
      {orgRules.length && !final ? (
        <div data-testid="org-rules">
          <Alert
            status={orgRules.some((r) => r.unmet) ? 'warning' : 'info'}
            title="Org-level gates apply"
            description={
              <ul style={{ margin: 0, paddingLeft: 20 }}>
                {orgRules.map((r) => (
                  <li key={r.field + r.orgPolicy}>
                    OrgPolicy {r.orgPolicy} rule {r.rule} ({r.field}) requires {r.requires}; the flow has {r.flowHas}
                    {r.unmet ? ': the plan waits until the flow meets it' : ''}
                  </li>
                ))}
              </ul>
            }
          />
        </div>
      ) : null}
      {automaticRollbacks.length ? (
        <div data-testid="automatic-rollback">
          <Alert
            status="danger"
            title="Rolled back automatically"
            description={
              <ul style={{ margin: 0, paddingLeft: 20 }}>
                {automaticRollbacks.map((r) => (
                  <li key={`${r.scope}/${r.application}`}>
                    {r.plan ? <Link href={links.plan(ns, r.plan)}>{r.plan}</Link> : 'A rollback plan being created'}{' '}
                    {r.scope === 'release' ? 'rolls back the release' : `rolls back ${r.application}`}: {r.application}{' '}
                    failed check {r.check} – {readableMessage(r.message)}
                  </li>
                ))}
              </ul>
            }
          />
        </div>
      ) : null}
      {cause && plan.spec.rollbackOf ? (
        <Text as="p" data-testid="rollback-cause">
          Started automatically: {cause.application} failed check {cause.check} in{' '}
          <Link href={links.plan(ns, plan.spec.rollbackOf)}>{plan.spec.rollbackOf}</Link> (
          {readableMessage(cause.message)})
        </Text>
      ) : null}

      {canApprove && !permission.loading && !permission.allowed ? (
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
                  {a.message ? ` – ${readableMessage(a.message)}` : ''}
                </li>
              ))}
            </ul>
          }
        />
      ) : null}
    </>
  );
}
