import { Button, Flex, Text } from '@backstage/ui';
import { EmptyState, ErrorState, LoadingState, usePageTitle, usePromotionsData } from '@kpromo/plugin-promotions-react';
import { ReleasesTable } from './ReleasesTable';

export function ReleasesPage() {
  usePageTitle('Releases · Promotions');
  const data = usePromotionsData(
    async (api) => {
      const [environments, applications] = await Promise.all([api.listEnvironments(), api.listApplications()]);
      return { environments, applications };
    },
    [],
    { pollMs: 10_000, stop: () => false },
  );

  if (!data.value && data.loading) return <LoadingState label="Loading releases" />;
  if (!data.value && data.error) return <ErrorState error={data.error} onRetry={data.retry} />;
  const { environments, applications } = data.value!;
  if (!environments.length)
    return (
      <EmptyState title="No environments yet">
        kpromo has no Environment resources it can see. Apply one (kubectl apply -f examples/crds/environment.yaml) and
        check that the controller watches its namespace.
      </EmptyState>
    );
  if (!applications.length)
    return (
      <EmptyState title="No applications yet">
        Environments exist ({environments.map((e) => e.name).join(', ')}) but no Application resources. Register your
        services as kpromo Applications to see their versions here.
      </EmptyState>
    );
  return (
    <Flex direction="column" gap="3">
      <Flex justify="between" align="center">
        <Text as="p" color="secondary">
          {applications.length} applications in {environments.length} environments. Updates every 10 seconds.
        </Text>
        <Button size="small" variant="secondary" onPress={data.retry}>
          Refresh
        </Button>
      </Flex>
      {data.error ? <ErrorState error={data.error} onRetry={data.retry} title="Refresh failed" /> : null}
      <ReleasesTable applications={applications} environments={environments} />
    </Flex>
  );
}
