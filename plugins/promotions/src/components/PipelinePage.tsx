import { useApi } from '@backstage/frontend-plugin-api';
import { Button, Flex, Link, Text } from '@backstage/ui';
import {
  type ApplicationSummary,
  DigestText,
  EmptyState,
  type EnvironmentSummary,
  ErrorState,
  type FlowStageView,
  formatCountdown,
  formatRelative,
  HealthBadge,
  LoadingState,
  loadPipelines,
  PhaseBadge,
  type Pipeline,
  type PromotionPlan,
  planHold,
  planProgress,
  promotionPlanApprovePermission,
  promotionPlanCreatePermission,
  promotionsApiRef,
  readableMessage,
  StatusPill,
  shortRef,
  skippedReasons,
  summarizeReasons,
  type Transition,
  useNow,
  usePageTitle,
  usePromotionPermission,
  usePromotionsData,
  versionIn,
} from '@kpromo/plugin-promotions-react';
import { type CSSProperties, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import { useEntityLinks, usePromotionsLinks } from '../routes';
import { CandidateDiff } from './CandidateDiff';
import { ConfirmDialog } from './Confirm';

const card: CSSProperties = {
  border: '1px solid var(--bui-border, #d0d0d0)',
  borderRadius: 8,
  padding: 12,
  background: 'var(--bui-bg-neutral-1, #fff)',
  minWidth: 200,
  flex: '1 1 0',
};

function AppLink({ app }: { app: ApplicationSummary }) {
  const href = useEntityLinks()(app.entityRef);
  return href ? (
    <Link href={href} weight="bold">
      {app.name}
    </Link>
  ) : (
    <Text weight="bold">{app.name}</Text>
  );
}

/**
 * The clusters of a fleet Environment (spec.clusters): how many and how many the controller has not
 * synced, as a summary (every cluster on hover) that expands to the list with each one's state.
 */
export function FleetClusters({ env }: { env: EnvironmentSummary }) {
  const clusters = env.clusters ?? [];
  if (!clusters.length) return null;
  const unsynced = clusters.filter((c) => !c.synced).length;
  const state = (synced: boolean) => (synced ? 'synced' : 'not synced');
  return (
    <details data-testid={`fleet-${env.name}`}>
      <summary
        style={{ cursor: 'pointer' }}
        title={clusters.map((c) => `${c.name}: ${state(c.synced)}`).join('\n')}
        data-testid={`fleet-summary-${env.name}`}
      >
        <Text variant="body-small">
          {clusters.length} cluster{clusters.length === 1 ? '' : 's'} ·{' '}
          {unsynced ? `${unsynced} not synced` : 'all synced'}
        </Text>
      </summary>
      <ul
        aria-label={`Clusters of ${env.name}`}
        style={{
          margin: '4px 0 0',
          padding: 0,
          listStyle: 'none',
          display: 'grid',
          gap: 4,
          maxHeight: 240,
          overflowY: 'auto',
        }}
      >
        {clusters.map((c) => {
          const own = [
            c.targetNamespace !== env.targetNamespace ? `namespace ${c.targetNamespace}` : '',
            c.delivery !== env.delivery ? c.delivery : '',
            ...Object.entries(c.labels ?? {}).map(([k, v]) => `${k}=${v}`),
          ].filter(Boolean);
          return (
            <li key={c.name} data-testid={`fleet-cluster-${c.name}`}>
              <Flex align="center" gap="2" style={{ flexWrap: 'wrap' }}>
                <Text variant="body-small" weight="bold">
                  {c.name}
                </Text>
                <StatusPill tone={c.synced ? 'success' : 'warning'} data-synced={String(c.synced)}>
                  {state(c.synced)}
                </StatusPill>
                {own.length ? (
                  <Text variant="body-small" color="secondary">
                    {own.join(' · ')}
                  </Text>
                ) : null}
              </Flex>
            </li>
          );
        })}
      </ul>
    </details>
  );
}

/** One environment: every application with its version and health; those eligible to move next marked. */
/**
 * How plans into a stage are approved, from the flow: "auto", "manual · 2 approvals", soak and freezes;
 * then each org rule stricter than the stage, which decides instead (the flow itself is not changed).
 */
export function stageRules(s: FlowStageView | undefined): string {
  if (!s) return '';
  const a = s.approvers;
  const who = [...(a?.users ?? []), ...(a?.groups ?? [])].map(shortRef);
  return [
    s.approval === 'auto'
      ? `auto${s.autoPromotionPaused ? ' (paused)' : ''}${s.cooldown ? ` · cooldown ${s.cooldown}` : ''}`
      : `manual · ${a?.count ?? 1} approval${(a?.count ?? 1) === 1 ? '' : 's'}${who.length ? ` from ${who.join(', ')}` : ''}`,
    s.requiredSoakTime ? `soak ${s.requiredSoakTime}` : '',
    s.freezeWindows?.length ? `freeze windows: ${s.freezeWindows.map((w) => w.name).join(', ')}` : '',
    ...(s.orgRules ?? []).map((r) => `org rule ${r.rule}: ${r.requires}${r.unmet ? ' (unmet: plans wait)' : ''}`),
  ]
    .filter(Boolean)
    .join(' · ');
}

function StageCard({
  env,
  apps,
  next,
  settings,
}: {
  env: EnvironmentSummary;
  apps: ApplicationSummary[];
  /** The transition out of this stage, for "ready for <next>". */
  next?: Transition;
  /** The flow's rules for plans into this stage. */
  settings?: FlowStageView;
}) {
  const ready = new Set(next?.diff?.candidates.map((c) => c.application));
  const deployed = apps.filter((a) => versionIn(a, env.name)?.tag || versionIn(a, env.name)?.digest);
  const unhealthy = deployed.filter((a) => versionIn(a, env.name)?.health !== 'Healthy').length;
  return (
    <section style={card} aria-label={`Stage ${env.name}`} data-testid={`stage-${env.name}`}>
      <Flex direction="column" gap="2">
        <Flex justify="between" align="center" gap="2" style={{ flexWrap: 'wrap' }}>
          <Text as="h3" variant="title-x-small" weight="bold">
            {env.name}
          </Text>
          <Text variant="body-small" color="secondary">
            {[
              env.tier,
              env.cluster
                ? (env.cluster.context ?? (env.cluster.inCluster ? 'in-cluster' : undefined))
                : env.clusters?.length
                  ? 'fleet' // its clusters below
                  : undefined,
            ]
              .filter(Boolean)
              .join(' · ')}
          </Text>
        </Flex>
        <FleetClusters env={env} />
        {settings ? (
          <Text variant="body-small" data-testid={`stage-rules-${env.name}`}>
            {stageRules(settings)}
          </Text>
        ) : null}
        <Text variant="body-small" color="secondary">
          {deployed.length} of {apps.length} deployed
          {deployed.length ? (unhealthy ? ` · ${unhealthy} not healthy` : ' · all healthy') : ''}
        </Text>
        <ul style={{ margin: 0, padding: 0, listStyle: 'none', display: 'grid', gap: 8 }}>
          {apps.map((a) => {
            const v = versionIn(a, env.name);
            return (
              <li
                key={a.name}
                data-testid={`stage-${env.name}-${a.name}`}
                style={{ borderTop: '1px solid var(--bui-border, #e0e0e0)', paddingTop: 6 }}
              >
                <Flex direction="column" gap="1">
                  <Flex justify="between" align="center" gap="2" style={{ flexWrap: 'wrap' }}>
                    <AppLink app={a} />
                    {v?.tag || v?.digest ? (
                      <HealthBadge health={v.health} />
                    ) : (
                      <Text variant="body-small" color="secondary">
                        not deployed
                      </Text>
                    )}
                  </Flex>
                  {v?.tag || v?.digest ? (
                    <Flex align="center" gap="2" style={{ flexWrap: 'wrap' }}>
                      <Text variant="body-small" weight="bold">
                        {v.tag ?? ''}
                      </Text>
                      {v.digest ? <DigestText digest={v.digest} /> : null}
                    </Flex>
                  ) : null}
                  {ready.has(a.name) && next ? (
                    <span>
                      <StatusPill tone="info" data-testid="eligible">
                        ready for {next.to}
                      </StatusPill>
                    </span>
                  ) : null}
                </Flex>
              </li>
            );
          })}
        </ul>
      </Flex>
    </section>
  );
}

/** Why an open plan is not running, in words, from its gate (freeze first, as every door says it). */
function holdText(p: PromotionPlan, now: number): string {
  // A plan of GET /plans, which comes without progress: the read model is projected here.
  const g = planProgress(p);
  const h = planHold(p, g, now);
  if (h === 'awaiting approval') return g.waitingFor ? `waiting for ${g.waitingFor}` : 'waiting for approval';
  if (h === 'frozen')
    return `frozen by ${g.frozen?.window}${g.frozen?.until ? `, ends ${formatCountdown(g.frozen.until, now)}` : ''}${g.frozen?.reason ? ` (${g.frozen.reason})` : ''}`;
  if (h === 'soaking' && g.eligibleAt) return `soaking in ${g.from}, eligible ${formatCountdown(g.eligibleAt, now)}`;
  if (g.phase === 'Promoting') return `promoting: ${g.succeeded + g.failed} of ${g.total} done`;
  return g.approved ? 'approved, starting' : 'waiting for approval';
}

/**
 * Between two stages: what may move next, what the open plan waits for (or the automatic plan its
 * cooldown holds, `wait`), and the one-click promote.
 */
function TransitionColumn({
  t,
  apps,
  wait,
}: {
  t: Transition;
  apps: ApplicationSummary[];
  wait?: FlowStageView['cooldownWait'];
}) {
  const api = useApi(promotionsApiRef);
  const navigate = useNavigate();
  const links = usePromotionsLinks();
  const now = useNow(30_000);
  const candidates = t.diff?.candidates ?? [];
  const createPerm = usePromotionPermission(promotionPlanCreatePermission);
  const approvePerm = usePromotionPermission(promotionPlanApprovePermission, {
    namespace: t.namespace,
    applications: candidates.map((c) => c.application),
  });
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>();
  const label = (c: { tag?: string } | undefined) => c?.tag;
  const changes = candidates.map((c) => ({ application: c.application, from: label(c.to), to: c.from.tag }));
  const promote = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const { plan } = await api.createPlan({
        namespace: t.namespace,
        flow: t.flow,
        from: t.from,
        to: t.to,
        applications: candidates.map((c) => c.application),
        // The digests this column showed: a deploy to the source since is refused, never approved unseen.
        expect: Object.fromEntries(candidates.map((c) => [c.application, c.from.digest])),
        ...(approvePerm.allowed ? { approve: true } : {}),
      });
      setOpen(false);
      navigate(links.plan(plan.metadata.namespace ?? t.namespace, plan.metadata.name));
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
    } finally {
      setBusy(false);
    }
  };
  const skipped = t.diff ? skippedReasons(t.diff) : [];
  const appCount = apps.length;
  return (
    <section
      aria-label={`${t.from} to ${t.to}`}
      data-testid={`transition-${t.from}-${t.to}`}
      style={{ ...card, minWidth: 170, flex: '0 1 210px', borderStyle: 'dashed' }}
    >
      <Flex direction="column" gap="2">
        <Text as="h3" variant="title-x-small" weight="bold">
          {t.from} → {t.to}
        </Text>
        {t.error ? (
          <Text variant="body-small" data-testid="transition-error">
            Cannot compute candidates: {readableMessage(t.error.message)}
          </Text>
        ) : null}
        {t.openPlan ? (
          <Flex direction="column" gap="1" data-testid="open-plan">
            <Flex gap="2" align="center" style={{ flexWrap: 'wrap' }}>
              <Link href={links.plan(t.namespace, t.openPlan.metadata.name)}>{t.openPlan.metadata.name}</Link>
              <PhaseBadge phase={t.openPlan.status?.phase} />
            </Flex>
            <Text variant="body-small" data-testid="plan-hold">
              {holdText(t.openPlan, now)}
            </Text>
          </Flex>
        ) : null}
        {wait && !t.openPlan ? (
          <Text variant="body-small" data-testid="cooldown-wait">
            {wait.message}
          </Text>
        ) : null}
        {t.diff && !t.openPlan ? (
          candidates.length ? (
            <Flex direction="column" gap="1">
              <Text variant="body-small" weight="bold" data-testid="eligible-count">
                {candidates.length} of {appCount} ready to promote
              </Text>
              <ul style={{ margin: 0, paddingLeft: 18 }}>
                {changes.map((c) => (
                  <li key={c.application}>
                    <Text variant="body-small">
                      {c.application}: {c.from ?? 'not deployed'} → {c.to}
                    </Text>
                  </li>
                ))}
              </ul>
            </Flex>
          ) : (
            <Text variant="body-small" data-testid="eligible-count">
              Nothing to promote{skipped.length ? `: ${summarizeReasons(skipped)}` : ''}
            </Text>
          )
        ) : null}
        {t.lastPlan ? (
          <Text variant="body-small" color="secondary">
            Last:{' '}
            <Link href={links.plan(t.namespace, t.lastPlan.metadata.name)} variant="body-small">
              {t.lastPlan.metadata.name}
            </Link>{' '}
            {t.lastPlan.status?.phase ?? ''}{' '}
            {formatRelative(t.lastPlan.status?.completedAt ?? t.lastPlan.metadata.creationTimestamp, now)}
          </Text>
        ) : null}
        {!t.openPlan && candidates.length && createPerm.allowed ? (
          <Button variant="primary" size="small" onPress={() => setOpen(true)}>
            {`Promote ${candidates.length} to ${t.to}`}
          </Button>
        ) : null}
        {t.openPlan ? (
          <Link href={links.plan(t.namespace, t.openPlan.metadata.name)} variant="body-small">
            Open the plan to approve or follow it
          </Link>
        ) : null}
      </Flex>
      <ConfirmDialog
        isOpen={open}
        title={`Promote to ${t.to}?`}
        confirmLabel={approvePerm.allowed ? `Promote to ${t.to}` : 'Create plan'}
        busy={busy}
        error={error}
        onCancel={() => {
          setOpen(false);
          setError(undefined);
        }}
        onConfirm={promote}
      >
        <Text as="p">
          {approvePerm.allowed
            ? `This creates a plan ${t.from} → ${t.to} (flow ${t.flow}) approved by you; the controller copies each image to the ${t.to} registry and rolls it out once the approval policy is met. This changes:`
            : `This creates a plan ${t.from} → ${t.to} (flow ${t.flow}); you cannot approve it, so it waits for an approver. It would change:`}
        </Text>
        <CandidateDiff candidates={candidates} images={t.diff?.images} />
      </ConfirmDialog>
    </section>
  );
}

function PipelineRow({ p, applications }: { p: Pipeline; applications: ApplicationSummary[] }) {
  const apps = applications.filter((a) => a.namespace === p.namespace).sort((a, b) => a.name.localeCompare(b.name));
  const id = `flow-${p.namespace}-${p.flow}`;
  return (
    <section aria-labelledby={id} data-testid={`pipeline-${p.flow}`}>
      <Flex direction="column" gap="2">
        <Text as="h2" variant="title-small" id={id}>
          Flow {p.flow}{' '}
          <Text as="span" variant="body-small" color="secondary">
            namespace {p.namespace} · {p.stages.map((s) => s.name).join(' → ')}
            {p.selectorSummary ? ` · ${p.selectorSummary}` : ''}
          </Text>
        </Text>
        {p.missing.length ? (
          <Text as="p" variant="body-small" data-testid="missing-stages">
            Not shown: {p.missing.join(', ')} (no Environment of that name you can see in namespace {p.namespace}).
          </Text>
        ) : null}
        <div style={{ display: 'flex', gap: 12, alignItems: 'stretch', overflowX: 'auto', paddingBottom: 4 }}>
          {p.stages.map((s, i) => (
            <div key={s.name} style={{ display: 'contents' }}>
              <StageCard env={s} apps={apps} next={p.transitions[i]} settings={p.settings[i]} />
              {i < p.stages.length - 1 ? (
                p.transitions[i] ? (
                  <TransitionColumn t={p.transitions[i]!} apps={apps} wait={p.settings[i + 1]?.cooldownWait} />
                ) : (
                  <Text variant="body-small" color="secondary" style={{ alignSelf: 'center' }}>
                    no transition
                  </Text>
                )
              ) : null}
            </div>
          ))}
        </div>
      </Flex>
    </section>
  );
}

/** Environments as stages left to right per flow, what may move next, and promote to the next stage. */
export function PipelinePage() {
  usePageTitle('Pipeline · Promotions');
  const data = usePromotionsData((api) => loadPipelines(api), [], { pollMs: 10_000, stop: () => false });
  if (!data.value && data.loading) return <LoadingState label="Loading the pipeline" />;
  if (!data.value && data.error) return <ErrorState error={data.error} onRetry={data.retry} />;
  const { pipelines, applications, environments } = data.value!;
  if (!environments.length)
    return (
      <EmptyState title="No environments yet">
        kpromo has no Environment resources it can see. Apply Environments and a PromotionFlow to see the pipeline.
      </EmptyState>
    );
  if (!pipelines.length)
    return (
      <EmptyState title="No promotion flow found">
        There is no PromotionFlow you may list, so the environments ({environments.map((e) => e.name).join(', ')}) are
        no stages yet. Create a PromotionFlow listing them as stages, or ask for RBAC list on promotionflows.
      </EmptyState>
    );
  return (
    <Flex direction="column" gap="5">
      <Text as="p" color="secondary">
        Each flow's environments from left to right: what runs where, what may move to the next stage, and what holds
        it. Updates every 10 seconds.
      </Text>
      {data.error ? <ErrorState error={data.error} onRetry={data.retry} title="Refresh failed" /> : null}
      {pipelines.map((p) => (
        <PipelineRow key={`${p.namespace}/${p.flow}`} p={p} applications={applications} />
      ))}
    </Flex>
  );
}
