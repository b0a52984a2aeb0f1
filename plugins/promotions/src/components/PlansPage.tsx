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
  Select,
  TableBody,
  TableHeader,
  TableRoot,
  Text,
  TextField,
} from '@backstage/ui';
import {
  type DiffResult,
  EmptyState,
  ErrorState,
  LoadingState,
  orderEnvironments,
  PhaseBadge,
  type PromotionPlan,
  planHold,
  promotionPlanCreatePermission,
  promotionsApiRef,
  usePromotionPermission,
  usePromotionsData,
} from '@kpromo/plugin-promotions-react';
import { useMemo, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import { usePromotionsLinks } from '../routes';

const list = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

export function NewPlanForm({ environments }: { environments: Array<{ name: string; tier?: string }> }) {
  const api = useApi(promotionsApiRef);
  const navigate = useNavigate();
  const links = usePromotionsLinks();
  const envs = useMemo(() => orderEnvironments(environments as never), [environments]);
  const [from, setFrom] = useState(envs[0]?.name ?? '');
  const [to, setTo] = useState(envs[1]?.name ?? '');
  const [teams, setTeams] = useState('');
  const [applications, setApplications] = useState('');
  const [preview, setPreview] = useState<DiffResult | undefined>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>();
  const query = { from, to, teams: list(teams), applications: list(applications) };

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

  return (
    <Card>
      <CardHeader>
        <Text as="h3" variant="title-small">
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
                setFrom(String(k));
                setPreview(undefined);
              }}
              options={envs.map((e) => ({ value: e.name, label: e.name }))}
            />
            <Select
              label="To"
              selectedKey={to}
              onSelectionChange={(k) => {
                setTo(String(k));
                setPreview(undefined);
              }}
              options={envs.map((e) => ({ value: e.name, label: e.name }))}
            />
            <TextField label="Teams" placeholder="all (comma separated)" value={teams} onChange={setTeams} />
            <TextField
              label="Applications"
              placeholder="all (comma separated)"
              value={applications}
              onChange={setApplications}
            />
          </Flex>
          <Flex gap="2">
            <Button
              variant="secondary"
              isDisabled={!from || !to || from === to}
              isPending={busy}
              onPress={() => act(async () => setPreview(await api.getDiff(query)))}
            >
              Preview candidates
            </Button>
            <Button
              variant="primary"
              isDisabled={!from || !to || from === to}
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
          </Flex>
          {from && from === to ? <Text color="warning">Pick two different environments.</Text> : null}
          {error ? <Alert status="danger" title="Could not create the plan" description={error.message} /> : null}
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
                  <li key={s.application} style={{ opacity: 0.7 }}>
                    {s.application}: skipped ({s.reason}) {s.message}
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

export function PlansTable({ plans }: { plans: PromotionPlan[] }) {
  const links = usePromotionsLinks();
  const navigate = useNavigate();
  const sorted = [...plans].sort((a, b) => created(b).localeCompare(created(a)));
  return (
    <TableRoot aria-label="Promotion plans">
      <TableHeader>
        <Column isRowHeader>Plan</Column>
        <Column>Stage</Column>
        <Column>Action</Column>
        <Column>Phase</Column>
        <Column>Apps</Column>
        <Column>Created</Column>
      </TableHeader>
      <TableBody>
        {sorted.map((p) => {
          const ns = p.metadata.namespace ?? 'default';
          const href = links.plan(ns, p.metadata.name);
          const n =
            (p.spec.action ?? 'promote') === 'rollback' ? (p.status?.apps?.length ?? 0) : p.spec.candidates.length;
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
                  {p.spec.from} → {p.spec.to}
                </Text>
              </Cell>
              <Cell>
                <Text variant="body-small">
                  {p.spec.action ?? 'promote'}
                  {hold(p)}
                </Text>
              </Cell>
              <Cell>
                <PhaseBadge phase={p.status?.phase} />
              </Cell>
              <Cell>
                <Text variant="body-small">
                  {n} ({p.status?.succeeded ?? 0} ok, {p.status?.failed ?? 0} failed)
                </Text>
              </Cell>
              <Cell>
                <Text variant="body-small">{created(p).replace('T', ' ').replace('Z', '')}</Text>
              </Cell>
            </Row>
          );
        })}
      </TableBody>
    </TableRoot>
  );
}

export function PlansPage() {
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
      {createPerm.allowed ? <NewPlanForm environments={environments} /> : null}
      {plans.length ? (
        <PlansTable plans={plans} />
      ) : (
        <EmptyState title="No promotion plans yet">
          {createPerm.allowed
            ? 'Create one above: pick the stage to promote (for example dev → stable), preview the candidates, then create the plan and approve it.'
            : 'Nobody has created a plan yet, and you lack promotion.plan.create to create one. Ask your team lead.'}
        </EmptyState>
      )}
    </Flex>
  );
}
