import { useApi } from '@backstage/frontend-plugin-api';
import {
  Alert,
  Button,
  Cell,
  Column,
  Flex,
  Link,
  Row,
  TableBody,
  TableHeader,
  TableRoot,
  Text,
  TextField,
} from '@backstage/ui';
import {
  type ApplicationSummary,
  type AppProgress,
  DigestText,
  EmptyState,
  ErrorState,
  formatCountdown,
  formatRelative,
  formatTime,
  gitCommitUrl,
  isFleetPlan,
  isNotFound,
  isRollback as isRollbackPlan,
  LiveAnnouncer,
  LoadingState,
  PhaseBadge,
  type PlanProgress,
  type PlanDetails as PlanWithProgress,
  type PromotionPlan,
  planProgress,
  planStarted,
  promotionPlanApprovePermission,
  promotionRollbackPermission,
  promotionsApiRef,
  readableMessage,
  shortDigest,
  shortRef,
  shortSha,
  useCurrentUser,
  useNow,
  usePageTitle,
  usePromotionPermission,
  usePromotionsData,
} from '@kpromo/plugin-promotions-react';
import { useEffect, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import { useEntityLinks, usePromotionsLinks } from '../routes';
import { ChangeList, ConfirmDialog, type PlanChange } from './Confirm';
import { PlanTimeline } from './PlanTimeline';
import { PlanWaves } from './PlanWaves';
import { SupplyChainState } from './SupplyChain';
import { VerificationChecks } from './VerificationChecks';

export { formatCountdown, formatTime } from '@kpromo/plugin-promotions-react';
export type { PlanChange } from './Confirm';

const label = (v: { tag?: string; digest?: string } | undefined) => v?.tag ?? shortDigest(v?.digest);

/**
 * What approving the plan will change: per application, the target environment's version before
 * and after. A rollback restores what its original plan replaced: before it runs, that comes from
 * the original plan (`original`); once running, from its own status (`previous` is what ran before
 * the rollback, `targetTag` what it restores).
 */
export function planChanges(plan: PromotionPlan, original?: PromotionPlan): PlanChange[] {
  if (isRollbackPlan(plan)) {
    const own = plan.status?.apps ?? [];
    if (own.length) return own.map((a) => ({ application: a.application, from: label(a.previous), to: a.targetTag }));
    return (original?.status?.apps ?? [])
      .filter((a) => a.written)
      .map((a) => ({ application: a.application, from: a.targetTag, to: label(a.previous) }));
  }
  return plan.spec.candidates.map((c) => ({ application: c.application, from: label(c.to), to: c.from.tag }));
}

/** The rollback plan of `plan` among `plans`, if someone created one. */
export function rollbackOf(plan: PromotionPlan, plans: PromotionPlan[] | undefined): PromotionPlan | undefined {
  return plans?.find(
    (p) =>
      isRollbackPlan(p) &&
      p.spec.rollbackOf === plan.metadata.name &&
      (p.metadata.namespace ?? 'default') === (plan.metadata.namespace ?? 'default'),
  );
}

/**
 * The person the controller judged `user` as (config persons: one person counts once, never for
 * their own plan), when it is not what the page shows for the user already.
 */
const asPerson = (user: string, person: string | undefined) =>
  person && person !== user && person !== shortRef(user) ? ` as ${person}` : '';

/** A user or group ref as a link to its catalog page. */
function EntityName({ entityRef, kind = 'user' }: { entityRef: string; kind?: string }) {
  const link = useEntityLinks()(entityRef, kind);
  return link ? (
    <Link href={link} title={entityRef}>
      {shortRef(entityRef)}
    </Link>
  ) : (
    <strong>{entityRef}</strong>
  );
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
          Requested by <EntityName entityRef={g.requestedBy} />
          {asPerson(g.requestedBy, g.requestedByPerson)}
        </Text>
      ) : null}
      {g.approvers.length ? (
        <ul data-testid="approvers" style={{ margin: 0, paddingLeft: 20 }}>
          {g.approvers.map((a) => (
            <li key={a.user}>
              <Text variant="body-small">
                Approved by <EntityName entityRef={a.user} />
                {asPerson(a.user, a.person)}
                {a.observedAt ? ` at ${formatTime(a.observedAt)}` : ' (not yet seen by the controller)'}
                {a.overrideFreeze ? ' (overriding the freeze)' : ''}
                {a.counted === false ? ` (does not count toward the approval policy${a.why ? `: ${a.why}` : ''})` : ''}
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

/** An app's progress in the read model; none while the controller has not started it (`Waiting` there). */
function progressOf(g: PlanProgress, app: string): AppProgress | undefined {
  const a = g.apps.find((x) => x.application === app);
  return a && a.phase !== 'Waiting' ? (a as AppProgress) : undefined;
}

/** What a screen reader hears when the plan moves on: phase and how many applications are done. */
export function progressAnnouncement(g: PlanProgress): string {
  const done = g.apps.filter((a) => ['Succeeded', 'Failed', 'RolledBack'].includes(a.phase)).length;
  const running = g.apps.find((a) => ['Copying', 'Writing', 'RollingOut', 'Verifying'].includes(a.phase));
  return [
    `Plan ${g.name}: ${g.phase}.`,
    g.total ? `${done} of ${g.total} applications done (${g.succeeded} succeeded, ${g.failed} failed).` : '',
    running ? `${running.application} is ${running.phase}.` : '',
  ]
    .filter(Boolean)
    .join(' ');
}

function AppName({ name, apps }: { name: string; apps?: ApplicationSummary[] }) {
  const link = useEntityLinks();
  const ref = apps?.find((a) => a.name === name)?.entityRef;
  const href = ref ? link(ref) : undefined;
  return href ? (
    <Link href={href} weight="bold">
      {name}
    </Link>
  ) : (
    <Text weight="bold">{name}</Text>
  );
}

/** The commit delivery wrote to the GitOps repository: linked on a known forge, else the short sha (copyable text). */
function GitOpsCommit({ commit, repository }: { commit: string; repository?: string }) {
  const href = gitCommitUrl(repository, commit);
  return (
    <Text variant="body-small" data-testid="gitops-commit">
      GitOps commit{' '}
      {href ? (
        <Link href={href} target="_blank" rel="noopener noreferrer" variant="body-small" title={commit}>
          {shortSha(commit)}
        </Link>
      ) : (
        <code title={commit}>{shortSha(commit)}</code>
      )}
    </Text>
  );
}

function Version({ v }: { v?: { tag?: string; digest?: string } }) {
  if (!v?.tag && !v?.digest) return <Text variant="body-small">—</Text>;
  return (
    <Flex direction="column" gap="0">
      <Text variant="body-small">{v.tag ?? '—'}</Text>
      {v.digest ? <DigestText digest={v.digest} /> : null}
    </Flex>
  );
}

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
  const api = useApi(promotionsApiRef);
  const navigate = useNavigate();
  const links = usePromotionsLinks();
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
  const [dialog, setDialog] = useState<'approve' | 'rollback' | 'override' | undefined>();
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>();
  const failed = g.apps.filter((a) => a.phase === 'Failed');
  const canRollback = !isRollback && final && g.phase !== 'RolledBack' && written.length > 0;
  const lineStop = g.lineStopped;
  const automaticRollbacks = g.automaticRollbacks;
  // A rollback the controller started because a check failed: the original plan records it.
  const cause = originalProgress?.automaticRollbacks.find((r) => !!r.planUID && r.planUID === plan.metadata.uid);

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

  // Bound to the plan shown (its uid): one deleted and created again since is refused (409), and the
  // refusal is shown. The rollback's name is generated: go to the one created.
  const rollback = async () => {
    const { plan: rb } = await api.rollbackPlan(ns, plan.metadata.name, {
      approve: !!approvePerm.allowed,
      ...(plan.metadata.uid ? { uid: plan.metadata.uid } : {}),
    });
    navigate(links.plan(rb.metadata.namespace ?? ns, rb.metadata.name));
  };

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
    <Flex direction="column" gap="4">
      <LiveAnnouncer message={progressAnnouncement(g)} testId="plan-announcer" />
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
              {g.succeeded} succeeded · {g.failed} failed · {apps.length} apps
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
          {canApprove && approvePerm.allowed ? (
            <Button variant="primary" onPress={() => setDialog('approve')}>
              {isRollback ? 'Approve rollback' : 'Approve & promote'}
            </Button>
          ) : null}
          {/* Triggers are neutral (Backstage UI's red secondary button is below AA contrast); the
              confirmation dialogs carry the destructive styling. */}
          {frozenNow && !approvedByMe && approvePerm.allowed ? (
            <Button variant="secondary" onPress={() => setDialog('override')}>
              Override freeze
            </Button>
          ) : null}
          {existingRollback ? (
            <Text variant="body-small" data-testid="existing-rollback">
              Rolled back by{' '}
              <Link href={links.plan(ns, existingRollback.metadata.name)}>{existingRollback.metadata.name}</Link>{' '}
              <PhaseBadge phase={existingRollback.status?.phase} action="rollback" />
            </Text>
          ) : canRollback && rollbackPerm.allowed ? (
            <Button variant="secondary" onPress={() => setDialog('rollback')}>
              Roll back
            </Button>
          ) : null}
        </Flex>
      </Flex>

      <GateDetails g={g} started={started} />

      {lineStop && !lineStop.overriddenBy && !final ? (
        <div data-testid="line-stopped">
          <Alert
            status="warning"
            title="The line is stopped"
            description={`${lineStop.stoppedBy ?? 'Someone'} stopped the line (LineStop ${lineStop.lineStop}): ${lineStop.reason}. ${started ? 'Apps not started yet wait' : 'The plan waits'} until it is lifted; rollbacks and hotfixes approved with override-freeze still pass.`}
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
                  {a.message ? ` – ${readableMessage(a.message)}` : ''}
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
            {isRollback ? null : <Column>Target tag</Column>}
            <Column>Progress</Column>
            <Column>Details</Column>
          </TableHeader>
          <TableBody>
            {apps.map((app) => {
              const c = plan.spec.candidates.find((x) => x.application === app);
              const p = progressOf(g, app);
              const o = originalProgress?.apps.find((a) => a.application === app);
              // Rollback: `previous` is what ran before the rollback, the target what it restores.
              const before = isRollback
                ? (p?.previous ?? (o ? { tag: o.targetTag, digest: o.digest } : undefined))
                : (c?.to ?? p?.previous);
              const after = isRollback
                ? p?.targetTag
                  ? { tag: p.targetTag, digest: p.digest }
                  : o?.previous
                : c?.from;
              const times = [
                p?.startedAt ? `started ${formatRelative(p.startedAt, now)}` : '',
                p?.finishedAt ? `finished ${formatRelative(p.finishedAt, now)}` : '',
              ].filter(Boolean);
              return (
                <Row key={app} id={app}>
                  <Cell>
                    <AppName name={app} apps={applications} />
                  </Cell>
                  <Cell>{before ? <Version v={before} /> : <Text variant="body-small">not deployed</Text>}</Cell>
                  <Cell>
                    <Version v={after} />
                  </Cell>
                  {isRollback ? null : (
                    <Cell>
                      <Text variant="body-small">{p?.targetTag ?? '—'}</Text>
                    </Cell>
                  )}
                  <Cell>
                    <span data-testid={`phase-${app}`}>
                      <PhaseBadge phase={p?.phase ?? 'Pending'} />
                    </span>
                  </Cell>
                  <Cell>
                    <Flex direction="column" gap="0">
                      <Text variant="body-small">
                        {[p?.reason, p?.message ? readableMessage(p.message) : undefined].filter(Boolean).join(': ') ||
                          (p?.attempts && p.attempts > 1 ? `attempt ${p.attempts}` : '')}
                      </Text>
                      {times.length ? (
                        <Text variant="body-small" color="secondary">
                          {times.join(' · ')}
                        </Text>
                      ) : null}
                      <SupplyChainState progress={g} app={app} />
                      {p?.commit ? <GitOpsCommit commit={p.commit} repository={gitRepository} /> : null}
                      {p?.verification ? <VerificationChecks verification={p.verification} app={app} /> : null}
                    </Flex>
                  </Cell>
                </Row>
              );
            })}
          </TableBody>
        </TableRoot>
      )}

      {/* A fleet plan: its waves and every application in every cluster; nothing for one cluster. */}
      {isFleetPlan(g) ? <PlanWaves plan={plan} progress={g} applications={apps} onChange={onChange} /> : null}

      <PlanTimeline plan={plan} progress={g} rollback={existingRollback} />

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
        onConfirm={() =>
          run(async () => onChange(await api.approvePlan(ns, plan.metadata.name, { uid: plan.metadata.uid ?? '' })))
        }
      >
        <Text as="p">
          {g.waitingFor
            ? `Your approval is recorded as ${me ?? 'you'}; the plan starts once the policy is met (now waiting for ${g.waitingFor}). `
            : ''}
          {isRollback
            ? `The controller restores the previous versions in ${plan.spec.to}. This changes:`
            : `The controller copies each image to the ${plan.spec.to} registry and rolls it out. This changes:`}
        </Text>
        {changes.length ? (
          <ChangeList changes={changes} to={plan.spec.to} />
        ) : (
          <Text as="p">The controller computes the versions to restore when the rollback starts.</Text>
        )}
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
                uid: plan.metadata.uid ?? '',
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
        <ChangeList changes={changes} to={plan.spec.to} />
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
        onConfirm={() => run(rollback)}
      >
        <Text as="p">This creates a rollback plan restoring the versions {plan.spec.to} ran before:</Text>
        <ul data-testid="rollback-list" style={{ margin: 0, paddingLeft: 20 }}>
          {g.apps
            .filter((a) => a.written)
            .map((a) => (
              <li key={a.application}>
                <strong>{a.application}</strong>: {a.targetTag ?? '?'} → {label(a.previous) ?? '?'}
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
