import {
  Cell,
  Column,
  Flex,
  Link,
  Row,
  SearchField,
  Select,
  Switch,
  TableBody,
  TableHeader,
  TableRoot,
  Text,
} from '@backstage/ui';
import {
  type ApplicationSummary,
  type EnvironmentSummary,
  type MatrixRow,
  orderEnvironments,
  releaseMatrix,
  VersionCell,
} from '@kpromo/plugin-promotions-react';
import { useMemo, useState } from 'react';
import { useEntityLinks } from '../routes';

const ALL = '__all__';

export interface ReleasesFilter {
  name: string;
  team: string;
  environment: string;
  driftOnly: boolean;
}

export function filterRows(rows: MatrixRow[], f: ReleasesFilter): MatrixRow[] {
  const q = f.name.trim().toLowerCase();
  return rows.filter(
    (r) =>
      (!q || r.app.name.toLowerCase().includes(q) || (r.app.repository ?? '').toLowerCase().includes(q)) &&
      (f.team === ALL || r.app.owner === f.team) &&
      (!f.driftOnly || r.drifted),
  );
}

/** Environments as columns, applications as rows; version and health per cell, drift highlighted. */
export function ReleasesTable({
  applications,
  environments,
  initialFilter,
  serverFiltered = false,
}: {
  applications: ApplicationSummary[];
  environments: EnvironmentSummary[];
  initialFilter?: Partial<ReleasesFilter>;
  /**
   * `applications` is one page the server filtered by name and team (the caller shows those fields):
   * the table then offers only the environment columns and the drift switch, over the rows given.
   */
  serverFiltered?: boolean;
}) {
  const [filter, setFilter] = useState<ReleasesFilter>({
    name: '',
    team: ALL,
    environment: ALL,
    driftOnly: false,
    ...initialFilter,
  });
  const envs = useMemo(() => orderEnvironments(environments), [environments]);
  const rows = useMemo(() => releaseMatrix(applications, envs), [applications, envs]);
  const teams = useMemo(() => [...new Set(applications.map((a) => a.owner))].sort(), [applications]);
  const visibleEnvs = filter.environment === ALL ? envs : envs.filter((e) => e.name === filter.environment);
  const visible = filterRows(rows, serverFiltered ? { ...filter, name: '', team: ALL } : filter);
  const multiNs = new Set(envs.map((e) => e.namespace)).size > 1;
  const entityLink = useEntityLinks();

  return (
    <Flex direction="column" gap="4">
      <Flex gap="4" align="end" style={{ flexWrap: 'wrap' }}>
        {serverFiltered ? null : (
          <>
            <SearchField
              label="Application"
              placeholder="Filter by name"
              value={filter.name}
              onChange={(name) => setFilter((f) => ({ ...f, name }))}
              aria-label="Filter by application name"
            />
            <Select
              label="Team"
              aria-label="Filter by team"
              selectedKey={filter.team}
              onSelectionChange={(k) => setFilter((f) => ({ ...f, team: String(k ?? ALL) }))}
              options={[{ value: ALL, label: 'All teams' }, ...teams.map((t) => ({ value: t, label: t }))]}
            />
          </>
        )}
        <Select
          label="Environment"
          aria-label="Filter by environment"
          selectedKey={filter.environment}
          onSelectionChange={(k) => setFilter((f) => ({ ...f, environment: String(k ?? ALL) }))}
          options={[{ value: ALL, label: 'All environments' }, ...envs.map((e) => ({ value: e.name, label: e.name }))]}
        />
        <Switch
          label={serverFiltered ? 'Only drift on this page' : 'Only drift'}
          isSelected={filter.driftOnly}
          onChange={(driftOnly) => setFilter((f) => ({ ...f, driftOnly }))}
        />
      </Flex>
      {visible.length === 0 ? (
        <Text as="p" color="secondary" data-testid={serverFiltered ? 'no-drift' : 'no-matches'}>
          {serverFiltered
            ? 'No application on this page has drift. Turn off "Only drift on this page" or go to another page.'
            : 'No application matches these filters. Clear the name filter or pick "All teams".'}
        </Text>
      ) : (
        <TableRoot aria-label="Releases per environment">
          <TableHeader>
            <Column isRowHeader>Application</Column>
            <Column>Team</Column>
            {visibleEnvs.map((e) => (
              <Column key={`${e.namespace}/${e.name}`}>
                {e.name}
                {e.tier ? ` (${e.tier})` : ''}
              </Column>
            ))}
          </TableHeader>
          <TableBody>
            {visible.map((r) => (
              <Row key={`${r.app.namespace}/${r.app.name}`} id={`${r.app.namespace}/${r.app.name}`}>
                <Cell>
                  <Flex direction="column" gap="0">
                    {entityLink(r.app.entityRef) ? (
                      <Link href={entityLink(r.app.entityRef)} weight="bold">
                        {r.app.name}
                      </Link>
                    ) : (
                      <Text weight="bold">{r.app.name}</Text>
                    )}
                    {multiNs || r.app.repository ? (
                      <Text variant="body-small" color="secondary">
                        {[multiNs ? r.app.namespace : undefined, r.app.repository].filter(Boolean).join(' · ')}
                      </Text>
                    ) : null}
                  </Flex>
                </Cell>
                <Cell>
                  {entityLink(r.app.owner, 'group') ? (
                    <Link href={entityLink(r.app.owner, 'group')} variant="body-small">
                      {r.app.owner}
                    </Link>
                  ) : (
                    <Text variant="body-small">{r.app.owner}</Text>
                  )}
                </Cell>
                {visibleEnvs.map((e) => {
                  const c = r.cells[envs.indexOf(e)];
                  return (
                    <Cell key={`${e.namespace}/${e.name}`}>
                      <span data-testid={`cell-${r.app.name}-${e.name}`}>
                        <VersionCell version={c?.version} drift={c?.drift} outside={c?.outside} />
                      </span>
                    </Cell>
                  );
                })}
              </Row>
            ))}
          </TableBody>
        </TableRoot>
      )}
    </Flex>
  );
}
