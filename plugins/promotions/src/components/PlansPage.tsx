import { useApi } from '@backstage/frontend-plugin-api';
import {
  Alert,
  Button,
  Card,
  CardBody,
  CardHeader,
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
  TextField,
} from '@backstage/ui';
import {
  candidatePairs,
  type DiffResult,
  type DiffWithImages,
  EmptyState,
  type EnvironmentSummary,
  ErrorState,
  type FlowView,
  flowTransitions,
  formatDuration,
  LoadingState,
  orderEnvironments,
  PhaseBadge,
  PLAN_PHASE_FILTERS,
  type PlanProgress,
  type PlansFilter,
  type PromotionPlan,
  planHold,
  planProgress,
  promotionPlanCreatePermission,
  promotionsApiRef,
  readableMessage,
  readableReason,
  shortRef,
  skippedNotListed,
  skippedReasons,
  summarizeNoCandidates,
  summarizeReasons,
  useContinuePages,
  useDebounced,
  useNow,
  usePageTitle,
  usePromotionPermission,
  usePromotionsData,
  useUrlParams,
} from '@kpromo/plugin-promotions-react';
import { useEffect, useMemo, useRef, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import { usePromotionsLinks } from '../routes';
import { CandidateDiff } from './CandidateDiff';
import { LineStopPanel } from './LineStopPanel';
import { RelativeTime } from './RelativeTime';

const list = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/** Why Create plan cannot be pressed now, in one line; undefined when it can. */
export function createBlocker(
  from: string,
  to: string,
  preview: DiffResult | undefined,
  checking: boolean,
): string | undefined {
  if (!from || !to) return 'Pick the environments to promote from and to.';
  if (from === to) return 'Pick two different environments.';
  if (checking || !preview) return 'Checking the candidates…';
  if (!preview.candidates.length)
    return `Nothing to promote ${from} → ${to}${preview.skipped.length ? `: ${summarizeReasons(skippedReasons(preview))}` : ''}.`;
  return undefined;
}

export function NewPlanForm({
  environments,
  plans = [],
  flows,
}: {
  environments: Array<Pick<EnvironmentSummary, 'name' | 'tier'> & Partial<EnvironmentSummary>>;
  plans?: PromotionPlan[];
  /** The stage transitions to start on; without them, adjacent environments by tier and those plans used. */
  flows?: FlowView[];
}) {
  const api = useApi(promotionsApiRef);
  const navigate = useNavigate();
  const links = usePromotionsLinks();
  const envs = useMemo(() => orderEnvironments(environments as EnvironmentSummary[]), [environments]);
  const [from, setFrom] = useState(envs[0]?.name ?? '');
  const [to, setTo] = useState(envs[1]?.name ?? '');
  const [teams, setTeams] = useState('');
  const [applications, setApplications] = useState('');
  const [preview, setPreview] = useState<DiffWithImages | undefined>();
  const [checking, setChecking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>();
  const [previewError, setPreviewError] = useState<Error | undefined>();
  const touched = useRef(false);
  const setTouched = (v: boolean) => {
    touched.current = v;
  };
  const query = { from, to, teams: list(teams), applications: list(applications) };
  const key = JSON.stringify(query);

  // Start on a stage that has something to promote (the first adjacent pair with candidates).
  // biome-ignore lint/correctness/useExhaustiveDependencies: only once, for the initial choice
  useEffect(() => {
    let cancelled = false;
    const pairs = flows?.length
      ? flows.flatMap(flowTransitions)
      : candidatePairs(
          envs.map((e) => ({ ...e, namespace: e.namespace ?? 'default' })),
          plans,
        );
    (async () => {
      for (const p of pairs) {
        const d = await api.getDiff({ from: p.from, to: p.to }).catch(() => undefined);
        if (cancelled || touched.current) return;
        if (d?.candidates.length) {
          setFrom(p.from);
          setTo(p.to);
          return;
        }
      }
    })();
    return () => {
      cancelled = true;
    };
  }, []);

  // The preview follows the form: candidates are checked whenever the stage or the filters change.
  // biome-ignore lint/correctness/useExhaustiveDependencies: key stands for the query
  useEffect(() => {
    let cancelled = false;
    setPreview(undefined);
    setPreviewError(undefined);
    if (!from || !to || from === to) return;
    setChecking(true);
    const t = setTimeout(() => {
      api
        .getDiff(query)
        .then((d) => !cancelled && setPreview(d))
        .catch((e) => !cancelled && setPreviewError(e instanceof Error ? e : new Error(String(e))))
        .finally(() => !cancelled && setChecking(false));
    }, 300);
    return () => {
      cancelled = true;
      clearTimeout(t);
    };
  }, [api, key]);

  const act = async (f: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await f();
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
    } finally {
      setBusy(false);
    }
  };
  const blocker = previewError
    ? 'The candidates could not be checked (see below).'
    : createBlocker(from, to, preview, checking);

  return (
    <Card>
      <CardHeader>
        <Text as="h2" variant="title-small">
          New promotion plan
        </Text>
      </CardHeader>
      <CardBody>
        <Flex direction="column" gap="3">
          <Flex gap="3" style={{ flexWrap: 'wrap' }} align="end">
            <Select
              label="From"
              selectedKey={from}
              onSelectionChange={(k) => {
                setTouched(true);
                setFrom(String(k));
              }}
              options={envs.map((e) => ({ value: e.name, label: e.name }))}
            />
            <Select
              label="To"
              selectedKey={to}
              onSelectionChange={(k) => {
                setTouched(true);
                setTo(String(k));
              }}
              options={envs.map((e) => ({ value: e.name, label: e.name }))}
            />
            <TextField
              label="Teams"
              placeholder="all (comma separated)"
              value={teams}
              onChange={(v) => {
                setTouched(true);
                setTeams(v);
              }}
            />
            <TextField
              label="Applications"
              placeholder="all (comma separated)"
              value={applications}
              onChange={(v) => {
                setTouched(true);
                setApplications(v);
              }}
            />
          </Flex>
          <Flex gap="2" align="center" style={{ flexWrap: 'wrap' }}>
            <Button
              variant="secondary"
              isDisabled={!from || !to || from === to}
              isPending={checking}
              onPress={() =>
                act(async () => {
                  setPreviewError(undefined);
                  setPreview(await api.getDiff(query));
                })
              }
            >
              Preview candidates
            </Button>
            <Button
              variant="primary"
              isDisabled={!!blocker}
              isPending={busy}
              onPress={() =>
                act(async () => {
                  const { plan } = await api.createPlan(query);
                  navigate(links.plan(plan.metadata.namespace ?? 'default', plan.metadata.name));
                })
              }
            >
              Create plan
            </Button>
            {blocker && !checking ? (
              <Text variant="body-small" data-testid="create-blocker">
                {blocker}
              </Text>
            ) : null}
          </Flex>
          {previewError ? (
            <Alert
              status="danger"
              title={`Could not check the candidates ${from} → ${to}`}
              description={readableMessage(previewError.message)}
            />
          ) : null}
          {error ? (
            <Alert
              status="danger"
              title="Could not create the plan"
              description={summarizeNoCandidates(readableMessage(error.message))}
            />
          ) : null}
          {preview ? (
            <Flex direction="column" gap="1" data-testid="diff-preview">
              <Text weight="bold">
                {preview.candidates.length} candidate{preview.candidates.length === 1 ? '' : 's'} {preview.from} →{' '}
                {preview.to}
                {preview.flow ? ` (flow ${preview.flow})` : ''}
              </Text>
              <CandidateDiff candidates={preview.candidates} images={preview.images} />
              <ul style={{ margin: 0, paddingLeft: 20 }}>
                {preview.skipped.map((s) => (
                  <li key={s.application}>
                    <Text variant="body-small" color="secondary">
                      {s.application}: skipped ({s.reason}) {readableReason(s.message)}
                    </Text>
                  </li>
                ))}
                {skippedNotListed(preview) ? (
                  <li>
                    <Text variant="body-small" color="secondary">
                      … and {skippedNotListed(preview)} more skipped (in all:{' '}
                      {summarizeReasons(skippedReasons(preview))})
                    </Text>
                  </li>
                ) : null}
              </ul>
            </Flex>
          ) : null}
        </Flex>
      </CardBody>
    </Card>
  );
}

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
  const links = usePromotionsLinks();
  const navigate = useNavigate();
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
      {data.error ? <ErrorState error={data.error} onRetry={data.retry} title="Could not list the plans" /> : null}
      {!page && data.loading ? <LoadingState label="Loading plans" /> : null}
      {page && page.items.length === 0 ? (
        filtered ? (
          <Text as="p" data-testid="no-plan-matches">
            No plan matches these filters.{' '}
            <Link
              href={links.plans()}
              onPress={() => setUrl(Object.fromEntries(FILTER_KEYS.map((k) => [k, undefined])))}
            >
              Clear the filters
            </Link>
          </Text>
        ) : (
          <EmptyState title="No promotion plans yet">
            {canCreate
              ? 'Create one above: pick the stage to promote (for example dev → stable), check the candidates, then create the plan and approve it.'
              : 'Nobody has created a plan yet, and you lack promotion.plan.create to create one. Ask your team lead.'}
          </EmptyState>
        )
      ) : null}
      {page?.items.length ? (
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
            {page.items.map((p) => {
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
                      {apps.length
                        ? `${apps.slice(0, 3).join(', ')}${apps.length > 3 ? ` +${apps.length - 3}` : ''}`
                        : '—'}{' '}
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
      ) : null}
      {page?.items.length ? (
        <Flex gap="2" align="center" data-testid="plans-paging">
          <Button size="small" variant="secondary" isDisabled={pages.index === 0} onPress={pages.previous}>
            Previous
          </Button>
          <Text variant="body-small" aria-live="polite">
            {first + 1}–{first + page.items.length}
            {page.total !== undefined ? ` of ${page.total}` : ''} plans
          </Text>
          <Button
            size="small"
            variant="secondary"
            isDisabled={!page.continue}
            onPress={() => pages.next(page.continue)}
          >
            Next
          </Button>
        </Flex>
      ) : null}
    </Flex>
  );
}

export function PlansPage() {
  usePageTitle('Plans · Promotions');
  const createPerm = usePromotionPermission(promotionPlanCreatePermission);
  const data = usePromotionsData(
    async (api) => {
      const [flows, environments] = await Promise.all([api.listFlows(), api.listEnvironments()]);
      return { flows, environments };
    },
    [],
    { pollMs: 60_000, stop: () => false },
  );
  if (!data.value && data.loading) return <LoadingState label="Loading plans" />;
  if (!data.value && data.error) return <ErrorState error={data.error} onRetry={data.retry} />;
  const { flows, environments } = data.value!;
  return (
    <Flex direction="column" gap="4">
      <LineStopPanel />
      {createPerm.allowed ? <NewPlanForm environments={environments} flows={flows} /> : null}
      {data.error ? <ErrorState error={data.error} onRetry={data.retry} title="Refresh failed" /> : null}
      <PlansTable flows={flows} environments={environments} canCreate={!!createPerm.allowed} />
    </Flex>
  );
}
