import { Cell, Column, Flex, Link, Row, TableBody, TableHeader, TableRoot, Text } from '@backstage/ui';
import {
  type ApplicationSummary,
  type AppProgress,
  DigestText,
  formatRelative,
  gitCommitUrl,
  orderText,
  PhaseBadge,
  type PlanProgress,
  type PromotionPlan,
  readableMessage,
  shortSha,
  stepText,
} from '@kpromo/plugin-promotions-react';
import { useEntityLinks } from '../routes';
import { SupplyChainState } from './SupplyChain';
import { VerificationChecks } from './VerificationChecks';

/** An app's progress in the read model; none while the controller has not started it (`Waiting` there). */
function progressOf(g: PlanProgress, app: string): AppProgress | undefined {
  const a = g.apps.find((x) => x.application === app);
  return a && a.phase !== 'Waiting' ? (a as AppProgress) : undefined;
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

/** One application's progress details: the controller's reason, when it ran, supply chain, commit, checks. */
function AppDetails({
  g,
  app,
  p,
  now,
  gitRepository,
}: {
  g: PlanProgress;
  app: string;
  p?: AppProgress;
  now: number;
  gitRepository?: string;
}) {
  const times = [
    p?.startedAt ? `started ${formatRelative(p.startedAt, now)}` : '',
    p?.finishedAt ? `finished ${formatRelative(p.finishedAt, now)}` : '',
  ].filter(Boolean);
  // Where the release's order holds the app (waits for, held by a failed dependency), in the contract's words.
  const order = p ? orderText(p, g.isRollback) : undefined;
  return (
    <Flex direction="column" gap="0">
      {order ? (
        <Text variant="body-small" data-testid={`order-${app}`}>
          {order}
        </Text>
      ) : (
        <Text variant="body-small">
          {[p?.reason, p?.message ? readableMessage(p.message) : undefined].filter(Boolean).join(': ') ||
            (p?.attempts && p.attempts > 1 ? `attempt ${p.attempts}` : '')}
        </Text>
      )}
      {times.length ? (
        <Text variant="body-small" color="secondary">
          {times.join(' · ')}
        </Text>
      ) : null}
      <SupplyChainState progress={g} app={app} />
      {p?.commit ? <GitOpsCommit commit={p.commit} repository={gitRepository} /> : null}
      {p?.verification ? <VerificationChecks verification={p.verification} app={app} /> : null}
    </Flex>
  );
}

/**
 * The plan's applications: the target's version before, what the plan brings (or a rollback
 * restores), and each one's progress.
 */
export function PlanApps({
  plan,
  g,
  apps,
  originalProgress,
  applications,
  gitRepository,
  now,
}: {
  plan: PromotionPlan;
  g: PlanProgress;
  apps: string[];
  /** The read model of the plan a rollback restores from. */
  originalProgress?: PlanProgress;
  applications?: ApplicationSummary[];
  gitRepository?: string;
  now: number;
}) {
  const isRollback = g.isRollback;
  if (apps.length === 0)
    return (
      <Text as="p" color="secondary">
        {isRollback
          ? 'The controller has not started this rollback yet; the applications appear here once it does.'
          : 'This plan has no candidates.'}
      </Text>
    );
  return (
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
          const after = isRollback ? (p?.targetTag ? { tag: p.targetTag, digest: p.digest } : o?.previous) : c?.from;
          // Its step in the release's order (known before approval), from the read model, Waiting too.
          const step = stepText(g.apps.find((x) => x.application === app) ?? {});
          return (
            <Row key={app} id={app}>
              <Cell>
                <Flex direction="column" gap="0">
                  <AppName name={app} apps={applications} />
                  {step ? (
                    <Text variant="body-small" color="secondary" data-testid={`step-${app}`}>
                      {step}
                    </Text>
                  ) : null}
                </Flex>
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
                <AppDetails g={g} app={app} p={p} now={now} gitRepository={gitRepository} />
              </Cell>
            </Row>
          );
        })}
      </TableBody>
    </TableRoot>
  );
}
