import { Flex, Tab, TabList, TabPanel, Tabs } from '@backstage/ui';
import { Route, Routes, useLocation, useParams } from 'react-router-dom';
import { usePromotionsLinks } from '../routes';
import { AdoptPanel } from './AdoptPanel';
import { AssistantPanel } from './AssistantPanel';
import { InsightsPage } from './InsightsPage';
import { PipelinePage } from './PipelinePage';
import { PlansPage } from './PlansPage';
import { PlanView } from './PlanView';
import { ReleasesPage } from './ReleasesPage';

function PlanRoute() {
  const { namespace, name } = useParams();
  // Keyed by the plan: switching plans starts from scratch, never showing the previous plan's data.
  return <PlanView key={`${namespace}/${name}`} namespace={namespace!} name={name!} />;
}

const SECTIONS = ['releases', 'pipeline', 'plans', 'insights', 'adopt', 'assistant'] as const;

/** The Promotions page: Releases, Pipeline, Plans (and a plan's view), Insights, Onboarding, Assistant. */
export function PromotionsPage() {
  const links = usePromotionsLinks();
  const { pathname } = useLocation();
  const selected = pathname.includes('/plans')
    ? 'plans'
    : pathname.includes('/pipeline')
      ? 'pipeline'
      : pathname.includes('/assistant')
        ? 'assistant'
        : pathname.includes('/insights')
          ? 'insights'
          : pathname.includes('/adopt')
            ? 'adopt'
            : 'releases';
  return (
    <Flex direction="column" gap="4" p="4">
      <Tabs selectedKey={selected}>
        <TabList aria-label="Promotions sections">
          <Tab id="releases" href={links.releases()}>
            Releases
          </Tab>
          <Tab id="pipeline" href={links.pipeline()}>
            Pipeline
          </Tab>
          <Tab id="plans" href={links.plans()}>
            Plans
          </Tab>
          <Tab id="insights" href={links.insights()}>
            Insights
          </Tab>
          <Tab id="adopt" href={links.adopt()}>
            Onboarding
          </Tab>
          <Tab id="assistant" href={links.assistant()}>
            Assistant
          </Tab>
        </TabList>
        {/* One panel per tab (so every tab's aria-controls names a panel); the selected one shows the section. */}
        {SECTIONS.map((key) => (
          <TabPanel key={key} id={key} shouldForceMount>
            {key === selected ? (
              <Routes>
                <Route path="/" element={<ReleasesPage />} />
                <Route path="/pipeline" element={<PipelinePage />} />
                <Route path="/plans" element={<PlansPage />} />
                <Route path="/plans/:namespace/:name" element={<PlanRoute />} />
                <Route path="/insights" element={<InsightsPage />} />
                <Route path="/adopt" element={<AdoptPanel />} />
                <Route path="/assistant" element={<AssistantPanel />} />
              </Routes>
            ) : null}
          </TabPanel>
        ))}
      </Tabs>
    </Flex>
  );
}
