import { Flex, Tab, TabList, Tabs } from '@backstage/ui';
import { Route, Routes, useLocation, useParams } from 'react-router-dom';
import { usePromotionsLinks } from '../routes';
import { AssistantPanel } from './AssistantPanel';
import { PlansPage } from './PlansPage';
import { PlanView } from './PlanView';
import { ReleasesPage } from './ReleasesPage';

function PlanRoute() {
  const { namespace, name } = useParams();
  return <PlanView namespace={namespace!} name={name!} />;
}

/** The Promotions page: Releases, Plans (and a plan's view), Assistant. */
export function PromotionsPage() {
  const links = usePromotionsLinks();
  const { pathname } = useLocation();
  const selected = pathname.includes('/plans') ? 'plans' : pathname.includes('/assistant') ? 'assistant' : 'releases';
  return (
    <Flex direction="column" gap="4" p="4">
      <Tabs selectedKey={selected}>
        <TabList aria-label="Promotions sections">
          <Tab id="releases" href={links.releases()}>
            Releases
          </Tab>
          <Tab id="plans" href={links.plans()}>
            Plans
          </Tab>
          <Tab id="assistant" href={links.assistant()}>
            Assistant
          </Tab>
        </TabList>
      </Tabs>
      <Routes>
        <Route path="/" element={<ReleasesPage />} />
        <Route path="/plans" element={<PlansPage />} />
        <Route path="/plans/:namespace/:name" element={<PlanRoute />} />
        <Route path="/assistant" element={<AssistantPanel />} />
      </Routes>
    </Flex>
  );
}
