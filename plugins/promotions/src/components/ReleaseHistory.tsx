import { Text } from '@backstage/ui';
import { ErrorState, LoadingState, ReleaseTimeline, useNow, usePromotionsData } from '@kpromo/plugin-promotions-react';
import { usePromotionsLinks } from '../routes';

/**
 * The release history of one application or one environment (GET /history), newest first: what
 * was promoted or rolled back, when, by whose approval, with what result. It outlives the plans.
 */
export function ReleaseHistory({
  namespace,
  application,
  environment,
  limit = 20,
}: {
  namespace?: string;
  application?: string;
  environment?: string;
  limit?: number;
}) {
  const links = usePromotionsLinks();
  const now = useNow(30_000);
  const data = usePromotionsData(
    (api) => api.listHistory({ namespace, application, environment, limit }),
    [namespace, application, environment, limit],
    { pollMs: 30_000, stop: () => false },
  );
  const label = `Release history of ${application ?? environment ?? 'everything'}`;
  if (!data.value && data.loading) return <LoadingState label="Loading the release history" />;
  if (!data.value && data.error) return <ErrorState error={data.error} onRetry={data.retry} />;
  const h = data.value!;
  return (
    <>
      {h.warnings?.map((w) => (
        <Text as="p" key={w} color="secondary">
          {w}
        </Text>
      ))}
      {h.items.length ? (
        <>
          <ReleaseTimeline
            entries={h.items}
            label={label}
            now={now}
            show={{ application: !application, environment: !environment }}
            planHref={(e) => links.plan(e.namespace, e.plan)}
          />
          {h.total > h.items.length ? (
            <Text as="p" variant="body-small" color="secondary">
              Showing the newest {h.items.length} of {h.total}.
            </Text>
          ) : null}
        </>
      ) : (
        <Text as="p" color="secondary" data-testid="history-empty">
          No promotion or rollback of {application ?? environment ?? 'anything'} has been recorded yet.
        </Text>
      )}
    </>
  );
}
