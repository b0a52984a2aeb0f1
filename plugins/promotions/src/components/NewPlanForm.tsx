import { useApi } from '@backstage/frontend-plugin-api';
import { Alert, Button, Card, CardBody, CardHeader, Flex, Select, Text, TextField } from '@backstage/ui';
import {
  candidatePairs,
  type DiffResult,
  type DiffWithImages,
  type EnvironmentSummary,
  type FlowView,
  flowTransitions,
  orderEnvironments,
  type PromotionPlan,
  type PromotionsApi,
  promotionsApiRef,
  readableMessage,
  readableReason,
  skippedNotListed,
  skippedReasons,
  summarizeNoCandidates,
  summarizeReasons,
} from '@kpromo/plugin-promotions-react';
import { type MutableRefObject, useEffect, useMemo, useRef, useState } from 'react';
import { useNavigate } from 'react-router-dom';
import { usePromotionsLinks } from '../routes';
import { CandidateDiff } from './CandidateDiff';

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

type Query = { from: string; to: string; teams: string[]; applications: string[] };

/**
 * Start on a stage that has something to promote (the first adjacent pair with candidates), unless
 * the user has changed the form (`touched`) before the answer came.
 */
function useStartOnCandidates(
  api: PromotionsApi,
  pairsOf: () => Array<{ from: string; to: string }>,
  touched: MutableRefObject<boolean>,
  choose: (from: string, to: string) => void,
) {
  // biome-ignore lint/correctness/useExhaustiveDependencies: only once, for the initial choice
  useEffect(() => {
    let cancelled = false;
    const pairs = pairsOf();
    (async () => {
      for (const p of pairs) {
        const d = await api.getDiff({ from: p.from, to: p.to }).catch(() => undefined);
        if (cancelled || touched.current) return;
        if (d?.candidates.length) {
          choose(p.from, p.to);
          return;
        }
      }
    })();
    return () => {
      cancelled = true;
    };
  }, []);
}

/** The preview follows the form: candidates are checked whenever the stage or the filters change. */
function useCandidatePreview(api: PromotionsApi, query: Query) {
  const [preview, setPreview] = useState<DiffWithImages | undefined>();
  const [checking, setChecking] = useState(false);
  const [previewError, setPreviewError] = useState<Error | undefined>();
  const { from, to } = query;
  const key = JSON.stringify(query);
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
  return { preview, setPreview, checking, previewError, setPreviewError };
}

/** What a plan would promote: the candidates with their images, and what is skipped and why. */
function DiffPreview({ preview }: { preview: DiffWithImages }) {
  return (
    <Flex direction="column" gap="1" data-testid="diff-preview">
      <Text weight="bold">
        {preview.candidates.length} candidate{preview.candidates.length === 1 ? '' : 's'} {preview.from} → {preview.to}
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
              … and {skippedNotListed(preview)} more skipped (in all: {summarizeReasons(skippedReasons(preview))})
            </Text>
          </li>
        ) : null}
      </ul>
    </Flex>
  );
}

/** The stage to promote and the filters of the new plan. */
function QueryFields({
  envs,
  values,
  onFrom,
  onTo,
  onTeams,
  onApplications,
}: {
  envs: EnvironmentSummary[];
  values: { from: string; to: string; teams: string; applications: string };
  onFrom: (v: string) => void;
  onTo: (v: string) => void;
  onTeams: (v: string) => void;
  onApplications: (v: string) => void;
}) {
  return (
    <Flex gap="3" style={{ flexWrap: 'wrap' }} align="end">
      <Select
        label="From"
        selectedKey={values.from}
        onSelectionChange={(k) => onFrom(String(k))}
        options={envs.map((e) => ({ value: e.name, label: e.name }))}
      />
      <Select
        label="To"
        selectedKey={values.to}
        onSelectionChange={(k) => onTo(String(k))}
        options={envs.map((e) => ({ value: e.name, label: e.name }))}
      />
      <TextField label="Teams" placeholder="all (comma separated)" value={values.teams} onChange={onTeams} />
      <TextField
        label="Applications"
        placeholder="all (comma separated)"
        value={values.applications}
        onChange={onApplications}
      />
    </Flex>
  );
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
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>();
  const touched = useRef(false);
  // A field the user changed is their choice: the initial stage no longer moves.
  const edit = (set: (v: string) => void) => (v: string) => {
    touched.current = true;
    set(v);
  };
  const query = { from, to, teams: list(teams), applications: list(applications) };

  useStartOnCandidates(
    api,
    () =>
      flows?.length
        ? flows.flatMap(flowTransitions)
        : candidatePairs(
            envs.map((e) => ({ ...e, namespace: e.namespace ?? 'default' })),
            plans,
          ),
    touched,
    (f, t) => {
      setFrom(f);
      setTo(t);
    },
  );
  const { preview, setPreview, checking, previewError, setPreviewError } = useCandidatePreview(api, query);

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
          <QueryFields
            envs={envs}
            values={{ from, to, teams, applications }}
            onFrom={edit(setFrom)}
            onTo={edit(setTo)}
            onTeams={edit(setTeams)}
            onApplications={edit(setApplications)}
          />
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
          {preview ? <DiffPreview preview={preview} /> : null}
        </Flex>
      </CardBody>
    </Card>
  );
}
