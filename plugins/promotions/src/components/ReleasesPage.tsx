import { Button, Flex, SearchField, Text } from '@backstage/ui';
import {
  type ApplicationSummary,
  type ApplicationsFilter,
  EmptyState,
  ErrorState,
  type ListResponse,
  LoadingState,
  offsetPage,
  type PromotionsApi,
  useContinuePages,
  useDebounced,
  usePageTitle,
  usePromotionsData,
  useUrlParams,
} from '@kpromo/plugin-promotions-react';
import { useRef } from 'react';
import { ReleasesTable } from './ReleasesTable';

/** Applications per page: the page asks the server for one page at a time, never for all of them. */
export const RELEASES_PAGE_SIZE = 100;
const POLL_MS = 10_000;

/**
 * What a filter field sends as GET /applications globs: each comma-separated entry matches names
 * containing it (`*entry*`), or, if it has a `*`, is taken as a glob over the whole name as typed.
 * Application names are lowercase Kubernetes names, so the name filter is lowercased.
 */
export function filterGlobs(text: string, opts: { lowercase?: boolean } = {}): string[] | undefined {
  const globs = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => (opts.lowercase ? s.toLowerCase() : s))
    .map((s) => (s.includes('*') ? s : `*${s}*`));
  return globs.length ? globs : undefined;
}

type PageQuery = ApplicationsFilter & { limit: number; continue?: string };

/**
 * One page of applications: GET /applications with limit/continue; from an API without
 * listApplicationsPage, its whole filtered list paged here (`continue` is then an offset).
 */
export async function loadApplicationsPage(
  api: PromotionsApi,
  q: PageQuery,
): Promise<ListResponse<ApplicationSummary>> {
  if (api.listApplicationsPage) return api.listApplicationsPage(q);
  return offsetPage(
    await api.listApplications({ namespace: q.namespace, teams: q.teams, applications: q.applications }),
    q,
  );
}

/**
 * Versions per environment, a page of applications at a time, polled every `pollMs` (and at once
 * on Refresh or when the window regains focus).
 */
export function ReleasesPage({
  pageSize = RELEASES_PAGE_SIZE,
  pollMs = POLL_MS,
}: {
  pageSize?: number;
  pollMs?: number;
} = {}) {
  usePageTitle('Releases · Promotions');
  // The filter is in the URL (?application=…&team=…) so a filtered view can be shared.
  const [params, setUrl] = useUrlParams();
  const nameText = params.get('application') ?? '';
  const teamText = params.get('team') ?? '';
  const name = useDebounced(nameText);
  const team = useDebounced(teamText);
  const filter: ApplicationsFilter = {
    applications: filterGlobs(name, { lowercase: true }),
    teams: filterGlobs(team),
  };
  const filtered = !!(filter.applications || filter.teams);
  const key = JSON.stringify(filter);
  const pages = useContinuePages(key);
  const { start } = pages;

  // Polls only the page shown (and the environments, the table's columns).
  const data = usePromotionsData(
    async (api) => {
      const [environments, page] = await Promise.all([
        api.listEnvironments(),
        loadApplicationsPage(api, { ...filter, limit: pageSize, continue: start }),
      ]);
      return { environments, page };
    },
    [key, start, pageSize],
    { pollMs, stop: () => false },
  );
  // The page shown stays until the next one has arrived: paging and filtering do not blank the table
  // (or unmount the filter field being typed in).
  const last = useRef(data.value);
  if (data.value) last.current = data.value;
  const shown = data.value ?? last.current;

  if (!shown) {
    if (data.error) return <ErrorState error={data.error} onRetry={data.retry} />;
    return <LoadingState label="Loading releases" />;
  }
  const { environments } = shown;
  if (!environments.length)
    return (
      <EmptyState title="No environments yet">
        kpromo has no Environment resources it can see. Apply one (kubectl apply -f examples/crds/environment.yaml) and
        check that the controller watches its namespace.
      </EmptyState>
    );
  if (data.value && !filtered && pages.index === 0 && !data.value.page.items.length)
    return (
      <EmptyState title="No applications yet">
        Environments exist ({environments.map((e) => e.name).join(', ')}) but no Application resources. Register your
        services as kpromo Applications to see their versions here.
      </EmptyState>
    );

  const setFilter = (k: 'application' | 'team', v: string) => setUrl({ [k]: v });
  const clearFilters = () => setUrl({ application: undefined, team: undefined });
  // A failed first load of a new filter or page shows the error, not the previous page's rows.
  const page = data.value?.page ?? (data.error ? undefined : shown.page);
  const settled = !!data.value; // the page shown is the one asked for (paging while loading would skip)
  const first = pages.index * pageSize;

  return (
    <Flex direction="column" gap="3">
      <Flex justify="between" align="end" gap="3" style={{ flexWrap: 'wrap' }}>
        <Flex gap="3" align="end" style={{ flexWrap: 'wrap' }}>
          <SearchField
            label="Application"
            placeholder="Part of a name, or a glob"
            value={nameText}
            onChange={(v) => setFilter('application', v)}
          />
          <SearchField
            label="Team"
            placeholder="Part of a team name"
            value={teamText}
            onChange={(v) => setFilter('team', v)}
          />
        </Flex>
        <Flex gap="3" align="center">
          <Text as="p" color="secondary">
            {environments.length} environments. Updates every {Math.round(pollMs / 1000)} seconds.
          </Text>
          <Button size="small" variant="secondary" onPress={data.retry}>
            Refresh
          </Button>
        </Flex>
      </Flex>
      {data.error ? (
        <ErrorState
          error={data.error}
          onRetry={data.retry}
          title={data.value ? 'Refresh failed' : 'Could not list the applications'}
        />
      ) : null}
      {!settled && !data.error && !page?.items.length ? <LoadingState label="Loading applications" /> : null}
      {settled && page && !page.items.length ? (
        filtered ? (
          <Flex gap="2" align="center" data-testid="no-matches">
            <Text as="p">No applications match these filters.</Text>
            <Button size="small" variant="secondary" onPress={clearFilters}>
              Clear the filters
            </Button>
          </Flex>
        ) : (
          <Text as="p" data-testid="empty-page">
            No applications on this page any more (some were removed). Go back with Previous.
          </Text>
        )
      ) : null}
      {page?.items.length ? (
        <ReleasesTable applications={page.items} environments={environments} serverFiltered />
      ) : null}
      {page && (page.items.length || pages.index > 0) ? (
        <Flex gap="2" align="center" data-testid="releases-paging">
          <Button size="small" variant="secondary" isDisabled={!settled || pages.index === 0} onPress={pages.previous}>
            Previous
          </Button>
          <Text variant="body-small" aria-live="polite" data-testid="releases-range">
            {!settled
              ? 'Loading…'
              : page.items.length
                ? `Showing ${first + 1}–${first + page.items.length}${
                    page.total !== undefined ? ` of ${page.total}` : ''
                  } applications`
                : 'No applications on this page'}
          </Text>
          <Button
            size="small"
            variant="secondary"
            isDisabled={!settled || !page.continue}
            onPress={() => pages.next(page.continue)}
          >
            Next
          </Button>
        </Flex>
      ) : null}
    </Flex>
  );
}
