import { Flex, Select, Text } from '@backstage/ui';
import {
  DORA_KEYS,
  DoraBarChart,
  DoraSummary,
  EmptyState,
  ErrorState,
  formatTime,
  LoadingState,
  orderEnvironments,
  usePageTitle,
  usePromotionsData,
  useUrlParams,
} from '@kpromo/plugin-promotions-react';
import { ReleaseHistory } from './ReleaseHistory';

const WINDOWS = ['7d', '30d', '90d'] as const;
const ALL = '*';

/**
 * Insights: the DORA four keys (GET /insights/dora) over a window, in total and per flow, team and
 * environment as bar charts, and the release history of one environment (or all) as a timeline.
 * Filters live in the URL, so a view can be shared.
 */
export function InsightsPage() {
  usePageTitle('Insights');
  const [params, setUrl] = useUrlParams();
  const window = WINDOWS.find((w) => w === params.get('window')) ?? '30d';
  const environment = params.get('environment') ?? ALL;
  const set = (k: string, v: string) => setUrl({ [k]: v === ALL ? undefined : v });
  const data = usePromotionsData(
    async (api) => {
      const [dora, environments] = await Promise.all([
        api.getDora({ window, environment: environment === ALL ? undefined : environment }),
        api.listEnvironments(),
      ]);
      return { dora, environments };
    },
    [window, environment],
    { pollMs: 60_000, stop: () => false },
  );
  if (!data.value && data.loading) return <LoadingState label="Loading insights" />;
  if (!data.value && data.error) return <ErrorState error={data.error} onRetry={data.retry} />;
  const { dora, environments } = data.value!;
  const envNames = [...new Set(orderEnvironments(environments).map((e) => e.name))];
  return (
    <Flex direction="column" gap="4">
      <Flex gap="4" align="end" style={{ flexWrap: 'wrap' }}>
        <Select
          label="Window"
          aria-label="DORA window"
          selectedKey={window}
          onSelectionChange={(k) => set('window', String(k ?? '30d'))}
          options={WINDOWS.map((w) => ({ value: w, label: `Last ${w.slice(0, -1)} days` }))}
        />
        <Select
          label="Environment"
          aria-label="Filter by environment"
          selectedKey={environment}
          onSelectionChange={(k) => set('environment', String(k ?? ALL))}
          options={[{ value: ALL, label: 'All environments' }, ...envNames.map((e) => ({ value: e, label: e }))]}
        />
      </Flex>
      <Text as="p" variant="body-small" color="secondary">
        {formatTime(dora.window.since)} – {formatTime(dora.window.until)}. Only namespaces where you may read promotion
        plans are counted.
      </Text>
      {dora.warnings?.map((w) => (
        <Text as="p" key={w} color="secondary">
          {w}
        </Text>
      ))}
      <Text as="h3" variant="title-small">
        DORA four keys
      </Text>
      <DoraSummary keys={dora.total} label="DORA four keys, all flows" />
      {dora.groups.length === 0 ? (
        <EmptyState title="No deployments in this window">
          Promotions appear here once a plan has promoted an application. Pick a longer window to look further back.
        </EmptyState>
      ) : (
        <Flex gap="4" style={{ flexWrap: 'wrap' }} data-testid="dora-charts">
          {DORA_KEYS.map((k) => (
            <div key={k} style={{ flex: '1 1 420px' }}>
              <DoraBarChart groups={dora.groups} keyName={k} />
            </div>
          ))}
        </Flex>
      )}
      <Text as="h3" variant="title-small">
        Release history{environment === ALL ? '' : ` of ${environment}`}
      </Text>
      <ReleaseHistory environment={environment === ALL ? undefined : environment} limit={50} />
    </Flex>
  );
}
