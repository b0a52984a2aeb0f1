import {
  Button,
  Cell,
  Column,
  Flex,
  Link,
  Row,
  SearchField,
  Select,
  TableBody,
  TableHeader,
  TableRoot,
  Text,
} from '@backstage/ui';
import {
  EmptyState,
  type EnvironmentSummary,
  ErrorState,
  type FlowView,
  formatDuration,
  LoadingState,
  PhaseBadge,
  PLAN_PHASE_FILTERS,
  type PlanProgress,
  type PlansFilter,
  type PromotionPlan,
  planHold,
  planProgress,
  shortRef,
  useContinuePages,
  useDebounced,
  useNow,
  usePromotionsData,
  useUrlParams,
} from '@kpromo/plugin-promotions-react';
import { useRef } from 'react';
import { useNavigate } from 'react-router-dom';
import { usePromotionsLinks } from '../routes';
import { RelativeTime } from './RelativeTime';

/** Why a plan waits, from its gate: ` (frozen)`, ` (awaiting approval)`, ` (soaking)` or nothing. */
function hold(p: PromotionPlan, g: PlanProgress): string {
  const h = planHold(p, g);
  return h ? ` (${h})` : '';
}

function created(p: PromotionPlan) {
  return p.metadata.creationTimestamp ?? p.status?.startedAt ?? '';
}

const ALL = '';

/** The server-side filters of GET /plans, kept in the page URL so a filtered list can be shared. */
export interface PlanFilter {
  flow: string;
  environment: string;
  phase: string;
  action: string;
  application: string;
  requestedBy: string;
}
const FILTER_KEYS: Array<keyof PlanFilter> = ['flow', 'environment', 'phase', 'action', 'application', 'requestedBy'];

/** The filter as GET /plans takes it: empty fields left out. */
export function plansQuery(f: PlanFilter): PlansFilter {
  return Object.fromEntries(Object.entries(f).filter(([, v]) => v)) as PlansFilter;
}

export const PAGE_SIZE = 20;

/** The filter fields above the list; the flow choice only when there are several flows. */
function PlanFilters({
  filter,
  set,
  flows,
  envNames,
}: {
  filter: PlanFilter;
  set: (k: keyof PlanFilter, v: string) => void;
  flows: FlowView[];
  envNames: string[];
}) {
  return (
    <Flex gap="3" align="end" style={{ flexWrap: 'wrap' }}>
      <SearchField
        label="Application"
        placeholder="Name or glob, e.g. check*"
        value={filter.application}
        onChange={(v) => set('application', v)}
      />
      <SearchField
        label="Requested by"
        placeholder="Part of a name"
        value={filter.requestedBy}
        onChange={(v) => set('requestedBy', v)}
      />
      <Select
        label="Environment"
        selectedKey={filter.environment}
        onSelectionChange={(k) => set('environment', String(k ?? ''))}
        options={[{ value: ALL, label: 'All environments' }, ...envNames.map((e) => ({ value: e, label: e }))]}
      />
      <Select
        label="Phase"
        selectedKey={filter.phase}
        onSelectionChange={(k) => set('phase', String(k ?? ''))}
        options={[
          { value: ALL, label: 'All phases' },
          ...PLAN_PHASE_FILTERS.map((p) => ({ value: p, label: p === 'active' ? 'Not finished' : p })),
        ]}
      />
      <Select
        label="Action"
        selectedKey={filter.action}
        onSelectionChange={(k) => set('action', String(k ?? ''))}
        options={[
          { value: ALL, label: 'Promotions and rollbacks' },
          { value: 'promote', label: 'Promotions' },
          { value: 'rollback', label: 'Rollbacks' },
        ]}
      />
      {flows.length > 1 ? (
        <Select
          label="Flow"
          selectedKey={filter.flow}
          onSelectionChange={(k) => set('flow', String(k ?? ''))}
          options={[
            { value: ALL, label: 'All flows' },
            ...[...new Set(flows.map((f) => f.name))].sort().map((f) => ({ value: f, label: f })),
          ]}
        />
      ) : null}
    </Flex>
  );
}

/** One row per plan: what it does, where, its phase, applications, who asked, when, and how long it took. */
function PlanRows({ items, now }: { items: PromotionPlan[]; now: number }) {
  const links = usePromotionsLinks();
  const navigate = useNavigate();
  return (
    <TableRoot aria-label="Promotion plans">
      <TableHeader>
        <Column isRowHeader>Plan</Column>
        <Column>Action</Column>
        <Column>Stage</Column>
        <Column>Phase</Column>
        <Column>Applications</Column>
        <Column>Requested by</Column>
        <Column>Created</Column>
        <Column>Took</Column>
      </TableHeader>
      <TableBody>
        {items.map((p) => {
          const ns = p.metadata.namespace ?? 'default';
          const href = links.plan(ns, p.metadata.name);
          // GET /plans answers plans without their progress: the read model is projected here.
          const g = planProgress(p);
          const apps = g.affectedApplications;
          const took =
            p.status?.startedAt && p.status?.completedAt
              ? formatDuration(Date.parse(p.status.completedAt) - Date.parse(p.status.startedAt))
              : '';
          return (
            <Row key={`${ns}/${p.metadata.name}`} id={`${ns}/${p.metadata.name}`}>
              <Cell>
                <Link
                  href={href}
                  onPress={(e: unknown) => {
                    (e as { continuePropagation?: () => void })?.continuePropagation?.();
                    navigate(href);
                  }}
                >
                  {p.metadata.name}
                </Link>
              </Cell>
              <Cell>
                <Text variant="body-small">
                  {g.action}
                  {hold(p, g)}
                </Text>
              </Cell>
              <Cell>
                <Text variant="body-small">{g.isRollback ? g.to : `${g.from} → ${g.to}`}</Text>
              </Cell>
              <Cell>
                <PhaseBadge phase={g.phase} action={g.action} />
              </Cell>
              <Cell>
                <Text variant="body-small" title={apps.join(', ')}>
                  {apps.length ? `${apps.slice(0, 3).join(', ')}${apps.length > 3 ? ` +${apps.length - 3}` : ''}` : '—'}{' '}
                  ({g.succeeded} ok, {g.failed} failed)
                </Text>
              </Cell>
              <Cell>
                <Text variant="body-small" title={p.spec.requestedBy}>
                  {p.spec.requestedBy ? shortRef(p.spec.requestedBy) : '—'}
                </Text>
              </Cell>
              <Cell>
                <Text variant="body-small">
                  <RelativeTime iso={created(p) || undefined} now={now} />
                </Text>
              </Cell>
              <Cell>
                <Text variant="body-small">{took || '—'}</Text>
              </Cell>
            </Row>
          );
        })}
      </TableBody>
    </TableRoot>
  );
}

/** An empty list: no plan matches the filters (with a way to clear them), or none exists yet. */
function NoPlans({ filtered, canCreate, onClear }: { filtered: boolean; canCreate: boolean; onClear: () => void }) {
  const links = usePromotionsLinks();
  return filtered ? (
    <Text as="p" data-testid="no-plan-matches">
      No plan matches these filters.{' '}
      <Link href={links.plans()} onPress={onClear}>
        Clear the filters
      </Link>
    </Text>
  ) : (
    <EmptyState title="No promotion plans yet">
      {canCreate
        ? 'Create one above: pick the stage to promote (for example dev → stable), check the candidates, then create the plan and approve it.'
        : 'Nobody has created a plan yet, and you lack promotion.plan.create to create one. Ask your team lead.'}
    </EmptyState>
  );
}

/** Previous/Next over the server's pages, and which plans of how many are shown. */
function PlansPaging({
  pages,
  first,
  page,
}: {
  pages: ReturnType<typeof useContinuePages>;
  first: number;
  page: { items: PromotionPlan[]; continue?: string; total?: number };
}) {
  return (
    <Flex gap="2" align="center" data-testid="plans-paging">
      <Button size="small" variant="secondary" isDisabled={pages.index === 0} onPress={pages.previous}>
        Previous
      </Button>
      <Text variant="body-small" aria-live="polite">
        {first + 1}–{first + page.items.length}
        {page.total !== undefined ? ` of ${page.total}` : ''} plans
      </Text>
      <Button size="small" variant="secondary" isDisabled={!page.continue} onPress={() => pages.next(page.continue)}>
        Next
      </Button>
    </Flex>
  );
}

/** Plans, newest first, filtered and paged by the server (GET /plans with limit/continue). */
export function PlansTable({
  flows = [],
  environments = [],
  pageSize = PAGE_SIZE,
  canCreate = false,
}: {
  flows?: FlowView[];
  environments?: Array<Pick<EnvironmentSummary, 'name'>>;
  pageSize?: number;
  /** The caller may create plans (the form is above): the empty list says how. */
  canCreate?: boolean;
}) {
  const now = useNow(30_000);
  const [params, setUrl] = useUrlParams();
  const filter = Object.fromEntries(FILTER_KEYS.map((k) => [k, params.get(k) ?? ALL])) as unknown as PlanFilter;
  const application = useDebounced(filter.application);
  const requestedBy = useDebounced(filter.requestedBy);
  const query = plansQuery({ ...filter, application, requestedBy });
  const key = JSON.stringify(query);
  // continue tokens of the pages before the current one (the first page has none)
  const pages = useContinuePages(key);
  const { start } = pages;
  const data = usePromotionsData(
    (api) => api.listPlansPage({ ...query, limit: pageSize, continue: start }),
    [key, start, pageSize],
    { pollMs: 5000, stop: () => false },
  );
  const set = (k: keyof PlanFilter, v: string) => setUrl({ [k]: v });
  const filtered = FILTER_KEYS.some((k) => filter[k]);
  // The page shown stays until the next one has arrived: paging and filtering do not blank the table.
  const last = useRef(data.value);
  if (data.value) last.current = data.value;
  const page = data.value ?? last.current;
  const first = pages.index * pageSize;
  const envNames = [...new Set(environments.map((e) => e.name))].sort();

  return (
    <Flex direction="column" gap="3">
      <PlanFilters filter={filter} set={set} flows={flows} envNames={envNames} />
      {data.error ? <ErrorState error={data.error} onRetry={data.retry} title="Could not list the plans" /> : null}
      {!page && data.loading ? <LoadingState label="Loading plans" /> : null}
      {page && page.items.length === 0 ? (
        <NoPlans
          filtered={filtered}
          canCreate={canCreate}
          onClear={() => setUrl(Object.fromEntries(FILTER_KEYS.map((k) => [k, undefined])))}
        />
      ) : null}
      {page?.items.length ? <PlanRows items={page.items} now={now} /> : null}
      {page?.items.length ? <PlansPaging pages={pages} first={first} page={page} /> : null}
    </Flex>
  );
}
