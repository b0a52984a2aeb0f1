import { Flex } from '@backstage/ui';
import {
  ErrorState,
  LoadingState,
  promotionPlanCreatePermission,
  usePageTitle,
  usePromotionPermission,
  usePromotionsData,
} from '@kpromo/plugin-promotions-react';
import { LineStopPanel } from './LineStopPanel';
import { NewPlanForm } from './NewPlanForm';
import { PlansTable } from './PlansTable';

/** The plans page: the line's state, the new-plan form (for those who may create plans) and the plans. */
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
