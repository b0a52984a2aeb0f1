import type { Entity } from '@backstage/catalog-model';
import { useEntity } from '@backstage/plugin-catalog-react';
import { Cell, Column, Flex, Link, Row, TableBody, TableHeader, TableRoot, Text } from '@backstage/ui';
import {
  EmptyState,
  ErrorState,
  LoadingState,
  orderEnvironments,
  PhaseBadge,
  type PromotionPlan,
  releaseMatrix,
  usePromotionsData,
  VersionCell,
} from '@kpromo/plugin-promotions-react';
import { usePromotionsLinks } from '../routes';

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

export function EntityPromotionsContent() {
  const { entity } = useEntity();
  const app = applicationOf(entity);
  const links = usePromotionsLinks();
  const data = usePromotionsData(
    async (api) => {
      const [environments, applications, plans] = await Promise.all([
        api.listEnvironments({ namespace: app.namespace }),
        api.listApplications({ namespace: app.namespace }),
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
  const mine = plans
    .filter((p) => appsOfPlan(p).includes(found.name))
    .sort((a, b) => (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? ''))
    .slice(0, 10);
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
            <VersionCell version={c.version} drift={c.drift} />
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
      <Text as="h3" variant="title-small">
        Last promotions
      </Text>
      {mine.length === 0 ? (
        <Text as="p" color="secondary">
          {found.name} has not been part of a promotion plan yet. Create one on the Promotions page.
        </Text>
      ) : (
        <TableRoot aria-label="Last promotions">
          <TableHeader>
            <Column isRowHeader>Plan</Column>
            <Column>Stage</Column>
            <Column>Version</Column>
            <Column>State</Column>
            <Column>When</Column>
          </TableHeader>
          <TableBody>
            {mine.map((p) => {
              const pa = p.status?.apps?.find((a) => a.application === found.name);
              const c = p.spec.candidates.find((x) => x.application === found.name);
              return (
                <Row key={p.metadata.name} id={p.metadata.name}>
                  <Cell>
                    <Link href={links.plan(p.metadata.namespace ?? 'default', p.metadata.name)}>{p.metadata.name}</Link>
                  </Cell>
                  <Cell>
                    <Text variant="body-small">
                      {p.spec.action === 'rollback' ? 'rollback ' : ''}
                      {p.spec.from} → {p.spec.to}
                    </Text>
                  </Cell>
                  <Cell>
                    <Text variant="body-small">{pa?.targetTag ?? c?.from.tag ?? '—'}</Text>
                  </Cell>
                  <Cell>
                    <PhaseBadge phase={pa?.phase ?? (p.status?.gate?.approved ? p.status?.phase : 'Pending')} />
                  </Cell>
                  <Cell>
                    <Text variant="body-small">
                      {(pa?.finishedAt ?? p.metadata.creationTimestamp ?? '').replace('T', ' ').replace('Z', '')}
                    </Text>
                  </Cell>
                </Row>
              );
            })}
          </TableBody>
        </TableRoot>
      )}
    </Flex>
  );
}
