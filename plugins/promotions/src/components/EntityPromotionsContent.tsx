import type { Entity } from '@backstage/catalog-model';
import { useEntity } from '@backstage/plugin-catalog-react';
import { Cell, Column, Flex, Link, Row, TableBody, TableHeader, TableRoot, Text } from '@backstage/ui';
import {
  EmptyState,
  ErrorState,
  formatRelative,
  formatTime,
  isRollback,
  LoadingState,
  orderEnvironments,
  PhaseBadge,
  type PromotionPlan,
  releaseMatrix,
  useNow,
  usePromotionsData,
  VersionCell,
  versionIn,
} from '@kpromo/plugin-promotions-react';
import { useEntityLinks, usePromotionsLinks } from '../routes';
import { ReleaseHistory } from './ReleaseHistory';
import { recordSummary } from './SupplyChain';

/** The kpromo Application behind a catalog entity: the catalog module's annotations, else the entity name. */
export function applicationOf(entity: Entity): { name: string; namespace?: string } {
  const a = entity.metadata.annotations ?? {};
  if (a['kpromo.dev/name']) return { name: a['kpromo.dev/name'], namespace: a['kpromo.dev/namespace'] };
  return { name: entity.metadata.name };
}

export function appsOfPlan(p: PromotionPlan): string[] {
  return [
    ...new Set([...p.spec.candidates.map((c) => c.application), ...(p.status?.apps ?? []).map((a) => a.application)]),
  ];
}

const newestFirst = (a: PromotionPlan, b: PromotionPlan) =>
  (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? '');

/** Promotions and rollbacks as a table: plan, stage, version, state, when (relative, absolute on hover). */
function HistoryTable({ plans, app, label }: { plans: PromotionPlan[]; app?: string; label: string }) {
  const links = usePromotionsLinks();
  const now = useNow(30_000);
  return (
    <TableRoot aria-label={label}>
      <TableHeader>
        <Column isRowHeader>Plan</Column>
        <Column>Stage</Column>
        <Column>Version</Column>
        <Column>State</Column>
        <Column>When</Column>
        {app ? <Column>Record</Column> : null}
      </TableHeader>
      <TableBody>
        {plans.map((p) => {
          const pa = app ? p.status?.apps?.find((a) => a.application === app) : undefined;
          const c = app ? p.spec.candidates.find((x) => x.application === app) : undefined;
          const rollback = isRollback(p);
          const at = pa?.finishedAt ?? p.status?.completedAt ?? p.metadata.creationTimestamp ?? '';
          const version = app
            ? (pa?.targetTag ?? c?.from.tag ?? '—')
            : `${appsOfPlan(p).length} app${appsOfPlan(p).length === 1 ? '' : 's'}`;
          return (
            <Row key={p.metadata.name} id={p.metadata.name}>
              <Cell>
                <Link href={links.plan(p.metadata.namespace ?? 'default', p.metadata.name)}>{p.metadata.name}</Link>
              </Cell>
              <Cell>
                <Text variant="body-small">
                  {rollback ? `rollback in ${p.spec.to}` : `${p.spec.from} → ${p.spec.to}`}
                </Text>
              </Cell>
              <Cell>
                <Text variant="body-small">{version}</Text>
              </Cell>
              <Cell>
                <PhaseBadge
                  phase={pa?.phase ?? (p.status?.gate?.approved ? p.status?.phase : 'Pending')}
                  action={rollback ? 'rollback' : 'promote'}
                />
              </Cell>
              <Cell>
                <Text variant="body-small">
                  {at ? (
                    <time dateTime={at} title={formatTime(at)}>
                      {formatRelative(at, now)}
                    </time>
                  ) : (
                    '—'
                  )}
                </Text>
              </Cell>
              {app ? (
                <Cell>
                  <Text variant="body-small">{recordSummary(p, app) || '—'}</Text>
                </Cell>
              ) : null}
            </Row>
          );
        })}
      </TableBody>
    </TableRoot>
  );
}

/** "Promotions" tab of a Component: versions across environments, the rollout in progress, its history. */
export function EntityPromotionsContent() {
  const { entity } = useEntity();
  const app = applicationOf(entity);
  const links = usePromotionsLinks();
  const data = usePromotionsData(
    async (api) => {
      const [environments, applications, plans] = await Promise.all([
        api.listEnvironments({ namespace: app.namespace }),
        api.listApplications({ namespace: app.namespace, applications: [app.name] }),
        api.listPlans({ namespace: app.namespace }),
      ]);
      return { environments, applications, plans };
    },
    [app.name, app.namespace],
    { pollMs: 5000, stop: () => false },
  );
  if (!data.value && data.loading) return <LoadingState label="Loading promotions" />;
  if (!data.value && data.error) return <ErrorState error={data.error} onRetry={data.retry} />;
  const { environments, applications, plans } = data.value!;
  const found = applications.find((a) => a.name === app.name && (!app.namespace || a.namespace === app.namespace));
  if (!found)
    return (
      <EmptyState title={`${app.name} is not a kpromo Application`}>
        No Application named {app.name} was found. Create an Application resource for it (or set the kpromo.dev/name
        annotation on this entity) to see its versions across environments.
      </EmptyState>
    );
  const envs = orderEnvironments(environments.filter((e) => e.namespace === found.namespace));
  const [row] = releaseMatrix([found], envs);
  const mine = plans.filter((p) => appsOfPlan(p).includes(found.name)).sort(newestFirst);
  const active = mine.find((p) => p.status?.gate?.approved && p.status?.phase === 'Promoting');
  const activeApp = active?.status?.apps?.find((a) => a.application === found.name);

  return (
    <Flex direction="column" gap="4">
      <Text as="h3" variant="title-small">
        Versions across environments
      </Text>
      <Flex gap="4" style={{ flexWrap: 'wrap' }} data-testid="entity-versions">
        {row.cells.map((c) => (
          <Flex
            key={c.environment}
            direction="column"
            gap="1"
            p="3"
            style={{ border: '1px solid var(--bui-border, #ddd)', borderRadius: 6 }}
          >
            <Text variant="body-small" color="secondary">
              {c.environment}
            </Text>
            <VersionCell version={c.version} drift={c.drift} outside={c.outside} />
          </Flex>
        ))}
      </Flex>
      <Text as="p" data-testid="rollout-state">
        Rollout:{' '}
        {active ? (
          <>
            {active.metadata.name} is promoting to {active.spec.to} — <PhaseBadge phase={activeApp?.phase} />
          </>
        ) : (
          'no promotion in progress'
        )}
      </Text>
      <Flex justify="between" align="center">
        <Text as="h3" variant="title-small">
          Promotions and rollbacks
        </Text>
        <Link href={links.plans({ q: found.name })} variant="body-small">
          All plans with {found.name}
        </Link>
      </Flex>
      {mine.length === 0 ? (
        <Text as="p" color="secondary">
          {found.name} has not been part of a promotion plan yet. Create one on the Promotions page.
        </Text>
      ) : (
        <HistoryTable plans={mine.slice(0, 10)} app={found.name} label="Last promotions" />
      )}
      <Text as="h3" variant="title-small">
        Release history
      </Text>
      <ReleaseHistory namespace={found.namespace} application={found.name} />
    </Flex>
  );
}

/** "Promotions" tab of an Environment (Resource of type kpromo-environment): what runs there, its history. */
export function EnvironmentPromotionsContent() {
  const { entity } = useEntity();
  const env = applicationOf(entity);
  const entityLink = useEntityLinks();
  const links = usePromotionsLinks();
  const data = usePromotionsData(
    async (api) => {
      const [environments, applications, plans] = await Promise.all([
        api.listEnvironments({ namespace: env.namespace }),
        api.listApplications({ namespace: env.namespace }),
        api.listPlans({ namespace: env.namespace }),
      ]);
      return { environments, applications, plans };
    },
    [env.name, env.namespace],
    { pollMs: 10_000, stop: () => false },
  );
  if (!data.value && data.loading) return <LoadingState label="Loading promotions" />;
  if (!data.value && data.error) return <ErrorState error={data.error} onRetry={data.retry} />;
  const { environments, applications, plans } = data.value!;
  const found = environments.find((e) => e.name === env.name && (!env.namespace || e.namespace === env.namespace));
  if (!found)
    return (
      <EmptyState title={`${env.name} is not a kpromo Environment`}>
        No Environment named {env.name} was found in the namespaces you can see.
      </EmptyState>
    );
  const apps = applications.filter((a) => a.namespace === found.namespace).sort((a, b) => a.name.localeCompare(b.name));
  const into = plans.filter((p) => p.spec.to === found.name).sort(newestFirst);
  return (
    <Flex direction="column" gap="4">
      <Text as="p" color="secondary">
        {[
          found.tier,
          found.cluster?.context
            ? `cluster context ${found.cluster.context}`
            : found.clusters
              ? `${found.clusters.length} clusters`
              : undefined,
          `namespace ${found.targetNamespace}`,
          `registry ${found.registry}`,
          `delivery ${found.delivery}`,
        ]
          .filter(Boolean)
          .join(' · ')}
      </Text>
      <Text as="h3" variant="title-small">
        What runs in {found.name}
      </Text>
      <TableRoot aria-label={`Applications in ${found.name}`}>
        <TableHeader>
          <Column isRowHeader>Application</Column>
          <Column>Team</Column>
          <Column>Version</Column>
        </TableHeader>
        <TableBody>
          {apps.map((a) => (
            <Row key={a.name} id={a.name}>
              <Cell>
                {entityLink(a.entityRef) ? (
                  <Link href={entityLink(a.entityRef)} weight="bold">
                    {a.name}
                  </Link>
                ) : (
                  <Text weight="bold">{a.name}</Text>
                )}
              </Cell>
              <Cell>
                <Text variant="body-small">{a.owner}</Text>
              </Cell>
              <Cell>
                <span data-testid={`env-version-${a.name}`}>
                  <VersionCell
                    version={versionIn(a, found.name)}
                    outside={a.drift?.filter((d) => d.environment === found.name)}
                  />
                </span>
              </Cell>
            </Row>
          ))}
        </TableBody>
      </TableRoot>
      <Flex justify="between" align="center">
        <Text as="h3" variant="title-small">
          Promotions into {found.name}
        </Text>
        <Link href={links.pipeline()} variant="body-small">
          Open the pipeline
        </Link>
      </Flex>
      {into.length ? (
        <HistoryTable plans={into.slice(0, 15)} label={`Promotions into ${found.name}`} />
      ) : (
        <Text as="p" color="secondary">
          Nothing has been promoted into {found.name} yet.
        </Text>
      )}
      <Text as="h3" variant="title-small">
        Release history of {found.name}
      </Text>
      <ReleaseHistory namespace={found.namespace} environment={found.name} />
    </Flex>
  );
}
