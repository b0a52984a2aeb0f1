import {
  ApiBlueprint,
  createFrontendPlugin,
  discoveryApiRef,
  fetchApiRef,
  PageBlueprint,
} from '@backstage/frontend-plugin-api';
import { EntityContentBlueprint } from '@backstage/plugin-catalog-react/alpha';
import { SearchFilterResultTypeBlueprint, SearchResultListItemBlueprint } from '@backstage/plugin-search-react/alpha';
import { PromotionsClient, promotionsApiRef } from '@kpromo/plugin-promotions-react';
import { catalogEntityRouteRef, rootRouteRef } from './routes';

function PromotionsIcon() {
  return (
    <svg viewBox="0 0 24 24" width="20" height="20" fill="currentColor" aria-hidden>
      <path d="M4 18h4v-4H4v4zm6-6h4V8h-4v4zm6-6v4h4V6h-4zM9 16.6 15.6 10l1.4 1.4L10.4 18 9 16.6z" />
    </svg>
  );
}

/** The promotions API client (discoveryApi + fetchApi → /api/promotions). */
export const promotionsApi = ApiBlueprint.make({
  params: (defineParams) =>
    defineParams({
      api: promotionsApiRef,
      deps: { discoveryApi: discoveryApiRef, fetchApi: fetchApiRef },
      factory: ({ discoveryApi, fetchApi }) => new PromotionsClient({ discoveryApi, fetchApi }),
    }),
});

/** /promotions: Releases, Plans (+ plan view) and the Assistant. */
export const promotionsPage = PageBlueprint.make({
  params: {
    path: '/promotions',
    title: 'Promotions',
    icon: <PromotionsIcon />,
    routeRef: rootRouteRef,
    loader: () => import('./components/PromotionsPage').then((m) => <m.PromotionsPage />),
  },
});

/** "Promotions" tab on catalog Components: versions across environments, last promotions, rollout state. */
export const entityPromotionsContent = EntityContentBlueprint.make({
  params: {
    path: 'promotions',
    title: 'Promotions',
    filter: { kind: 'component' },
    loader: () => import('./components/EntityPromotionsContent').then((m) => <m.EntityPromotionsContent />),
  },
});

/** "Promotions" tab on kpromo Environments (Resources of type kpromo-environment): what runs there, history. */
export const environmentPromotionsContent = EntityContentBlueprint.make({
  name: 'environment',
  params: {
    path: 'promotions',
    title: 'Promotions',
    filter: { kind: 'resource', 'spec.type': 'kpromo-environment' },
    loader: () => import('./components/EntityPromotionsContent').then((m) => <m.EnvironmentPromotionsContent />),
  },
});

/** Search results of type `kpromo` (applications, environments, plans; see the example portal's collator). */
export const promotionsSearchResultListItem = SearchResultListItemBlueprint.make({
  params: {
    predicate: (result) => result.type === 'kpromo',
    icon: <PromotionsIcon />,
    component: () => import('./components/SearchResultItem').then((m) => m.KpromoSearchResultListItem),
  },
});

/** "Promotions" in the search page's result type filter. */
export const promotionsSearchResultType = SearchFilterResultTypeBlueprint.make({
  params: { value: 'kpromo', name: 'Promotions', icon: <PromotionsIcon /> },
});

export default createFrontendPlugin({
  pluginId: 'promotions',
  info: { packageJson: () => import('../package.json') },
  routes: { root: rootRouteRef },
  externalRoutes: { catalogEntity: catalogEntityRouteRef },
  extensions: [
    promotionsApi,
    promotionsPage,
    entityPromotionsContent,
    environmentPromotionsContent,
    promotionsSearchResultListItem,
    promotionsSearchResultType,
  ],
});
