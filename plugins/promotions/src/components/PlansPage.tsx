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
  EmptyState,
  type EnvironmentSummary,
  ErrorState,
  formatDuration,
  formatRelative,
  formatTime,
  isFinalPlan,
  LoadingState,
  orderEnvironments,
  PhaseBadge,
  type PromotionPlan,
  planHold,
  promotionPlanCreatePermission,
  promotionsApiRef,
  readableMessage,
  readableReason,
  shortRef,
  summarizeNoCandidates,
  summarizeReasons,
  useNow,
  usePageTitle,
  usePromotionPermission,
  usePromotionsData,
} from '@kpromo/plugin-promotions-react';
import { useEffect, useMemo, useRef, useState } from 'react';
import { useNavigate, useSearchParams } from 'react-router-dom';
import { usePromotionsLinks } from '../routes';

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
    return `Nothing to promote ${from} → ${to}${preview.skipped.length ? `: ${summarizeReasons(preview.skipped.map((s) => s.reason))}` : ''}.`;
  return undefined;
}

export function NewPlanForm({
  environments,
  plans = [],
}: {
  environments: Array<Pick<EnvironmentSummary, 'name' | 'tier'> & Partial<EnvironmentSummary>>;
  plans?: PromotionPlan[];
}) {
  const api = useApi(promotionsApiRef);
  const navigate = useNavigate();
  const links = usePromotionsLinks();
  const envs = useMemo(() => orderEnvironments(environments as EnvironmentSummary[]), [environments]);
  const [from, setFrom] = useState(envs[0]?.name ?? '');
  const [to, setTo] = useState(envs[1]?.name ?? '');
  const [teams, setTeams] = useState('');
  const [applications, setApplications] = useState('');
  const [preview, setPreview] = useState<DiffResult | undefined>();
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
    const pairs = candidatePairs(
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
              <ul style={{ margin: 0, paddingLeft: 20 }}>
                {preview.candidates.map((c) => (
                  <li key={c.application}>
                    {c.application}: {c.to?.tag ?? 'not deployed'} → {c.from.tag}
                  </li>
                ))}
                {preview.skipped.map((s) => (
                  <li key={s.application}>
                    <Text variant="body-small" color="secondary">
                      {s.application}: skipped ({s.reason}) {readableReason(s.message)}
                    </Text>
                  </li>
                ))}
              </ul>
            </Flex>
          ) : null}
        </Flex>
      </CardBody>
    </Card>
  );
}

/** Why a plan waits, from status.gate: ` (awaiting approval)`, ` (frozen)`, ` (soaking)` or nothing. */
function hold(p: PromotionPlan): string {
  const h = planHold(p);
  return h ? ` (${h})` : '';
}

function created(p: PromotionPlan) {
  return p.metadata.creationTimestamp ?? p.status?.startedAt ?? '';
}

export const appsOfPlan = (p: PromotionPlan): string[] =>
  (p.spec.action ?? 'promote') === 'rollback'
    ? (p.status?.apps ?? []).map((a) => a.application)
    : p.spec.candidates.map((c) => c.application);

const ALL = '';
const PHASES = ['active', 'Pending', 'Promoting', 'Complete', 'Incomplete', 'Failed', 'RolledBack'];

export interface PlanFilter {
  q: string;
  stage: string;
  phase: string;
  action: string;
  flow: string;
}

/** The plans matching the filter (text matches the plan name, applications and who requested it). */
export function filterPlans(plans: PromotionPlan[], f: PlanFilter): PromotionPlan[] {
  const q = f.q.trim().toLowerCase();
  return plans.filter(
    (p) =>
      (!q ||
        p.metadata.name.toLowerCase().includes(q) ||
        appsOfPlan(p).some((a) => a.toLowerCase().includes(q)) ||
        (p.spec.requestedBy ?? '').toLowerCase().includes(q)) &&
      (!f.stage || `${p.spec.from}>${p.spec.to}` === f.stage) &&
      (!f.action || (p.spec.action ?? 'promote') === f.action) &&
      (!f.flow || p.spec.flow === f.flow) &&
      (!f.phase || (f.phase === 'active' ? !isFinalPlan(p) : (p.status?.phase ?? 'Pending') === f.phase)),
  );
}

export const PAGE_SIZE = 20;

export function PlansTable({ plans, pageSize = PAGE_SIZE }: { plans: PromotionPlan[]; pageSize?: number }) {
  const links = usePromotionsLinks();
  const navigate = useNavigate();
  const now = useNow(30_000);
  const [params, setParams] = useSearchParams();
  const filter: PlanFilter = {
    q: params.get('q') ?? '',
    stage: params.get('stage') ?? ALL,
    phase: params.get('phase') ?? ALL,
    action: params.get('action') ?? ALL,
    flow: params.get('flow') ?? ALL,
  };
  const page = Math.max(0, Number(params.get('page') ?? 0) || 0);
  const set = (k: keyof PlanFilter | 'page', v: string) =>
    setParams(
      (prev) => {
        const n = new URLSearchParams(prev);
        if (v) n.set(k, v);
        else n.delete(k);
        if (k !== 'page') n.delete('page');
        return n;
      },
      { replace: true },
    );
  const sorted = useMemo(() => [...plans].sort((a, b) => created(b).localeCompare(created(a))), [plans]);
  const stages = [...new Set(plans.map((p) => `${p.spec.from}>${p.spec.to}`))].sort();
  const flows = [...new Set(plans.map((p) => p.spec.flow))].sort();
  const visible = filterPlans(sorted, filter);
  const pages = Math.max(1, Math.ceil(visible.length / pageSize));
  const current = Math.min(page, pages - 1);
  const shown = visible.slice(current * pageSize, (current + 1) * pageSize);
  const filtered = Object.values(filter).some(Boolean);

  return (
    <Flex direction="column" gap="3">
      <Flex gap="3" align="end" style={{ flexWrap: 'wrap' }}>
        <SearchField
          label="Search"
          placeholder="Plan, application or person"
          value={filter.q}
          onChange={(v) => set('q', v)}
          aria-label="Search plans"
        />
        <Select
          label="Stage"
          selectedKey={filter.stage}
          onSelectionChange={(k) => set('stage', String(k ?? ''))}
          options={[
            { value: ALL, label: 'All stages' },
            ...stages.map((s) => ({ value: s, label: s.replace('>', ' → ') })),
          ]}
        />
        <Select
          label="Phase"
          selectedKey={filter.phase}
          onSelectionChange={(k) => set('phase', String(k ?? ''))}
          options={[
            { value: ALL, label: 'All phases' },
            ...PHASES.map((p) => ({ value: p, label: p === 'active' ? 'Not finished' : p })),
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
            options={[{ value: ALL, label: 'All flows' }, ...flows.map((f) => ({ value: f, label: f }))]}
          />
        ) : null}
      </Flex>
      {visible.length === 0 ? (
        <Text as="p" data-testid="no-plan-matches">
          No plan matches these filters.{' '}
          {filtered ? (
            <Link href={links.plans()} onPress={() => setParams(new URLSearchParams(), { replace: true })}>
              Clear the filters
            </Link>
          ) : null}
        </Text>
      ) : (
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
            {shown.map((p) => {
              const ns = p.metadata.namespace ?? 'default';
              const href = links.plan(ns, p.metadata.name);
              const apps = appsOfPlan(p);
              const at = created(p);
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
                      {p.spec.action ?? 'promote'}
                      {hold(p)}
                    </Text>
                  </Cell>
                  <Cell>
                    <Text variant="body-small">
                      {(p.spec.action ?? 'promote') === 'rollback' ? p.spec.to : `${p.spec.from} → ${p.spec.to}`}
                    </Text>
                  </Cell>
                  <Cell>
                    <PhaseBadge phase={p.status?.phase} action={p.spec.action ?? 'promote'} />
                  </Cell>
                  <Cell>
                    <Text variant="body-small" title={apps.join(', ')}>
                      {apps.length
                        ? `${apps.slice(0, 3).join(', ')}${apps.length > 3 ? ` +${apps.length - 3}` : ''}`
                        : '—'}{' '}
                      ({p.status?.succeeded ?? 0} ok, {p.status?.failed ?? 0} failed)
                    </Text>
                  </Cell>
                  <Cell>
                    <Text variant="body-small" title={p.spec.requestedBy}>
                      {p.spec.requestedBy ? shortRef(p.spec.requestedBy) : '—'}
                    </Text>
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
                  <Cell>
                    <Text variant="body-small">{took || '—'}</Text>
                  </Cell>
                </Row>
              );
            })}
          </TableBody>
        </TableRoot>
      )}
      {visible.length > pageSize ? (
        <Flex gap="2" align="center" data-testid="plans-paging">
          <Button
            size="small"
            variant="secondary"
            isDisabled={current === 0}
            onPress={() => set('page', String(current - 1))}
          >
            Previous
          </Button>
          <Text variant="body-small" aria-live="polite">
            {current * pageSize + 1}–{Math.min(visible.length, (current + 1) * pageSize)} of {visible.length} plans
          </Text>
          <Button
            size="small"
            variant="secondary"
            isDisabled={current >= pages - 1}
            onPress={() => set('page', String(current + 1))}
          >
            Next
          </Button>
        </Flex>
      ) : (
        <Text variant="body-small" color="secondary">
          {visible.length} of {plans.length} plans
        </Text>
      )}
    </Flex>
  );
}

export function PlansPage() {
  usePageTitle('Plans · Promotions');
  const createPerm = usePromotionPermission(promotionPlanCreatePermission);
  const data = usePromotionsData(
    async (api) => {
      const [plans, environments] = await Promise.all([api.listPlans(), api.listEnvironments()]);
      return { plans, environments };
    },
    [],
    { pollMs: 5000, stop: () => false },
  );
  if (!data.value && data.loading) return <LoadingState label="Loading plans" />;
  if (!data.value && data.error) return <ErrorState error={data.error} onRetry={data.retry} />;
  const { plans, environments } = data.value!;
  return (
    <Flex direction="column" gap="4">
      {createPerm.allowed ? <NewPlanForm environments={environments} plans={plans} /> : null}
      {data.error ? <ErrorState error={data.error} onRetry={data.retry} title="Refresh failed" /> : null}
      {plans.length ? (
        <PlansTable plans={plans} />
      ) : (
        <EmptyState title="No promotion plans yet">
          {createPerm.allowed
            ? 'Create one above: pick the stage to promote (for example dev → stable), check the candidates, then create the plan and approve it.'
            : 'Nobody has created a plan yet, and you lack promotion.plan.create to create one. Ask your team lead.'}
        </EmptyState>
      )}
    </Flex>
  );
}
