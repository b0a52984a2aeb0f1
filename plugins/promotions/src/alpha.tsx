import {
  ApiBlueprint,
  createFrontendPlugin,
  discoveryApiRef,
  fetchApiRef,
  PageBlueprint,
} from '@backstage/frontend-plugin-api';
import { EntityContentBlueprint } from '@backstage/plugin-catalog-react/alpha';
import { PromotionsClient, promotionsApiRef } from '@kpromo/plugin-promotions-react';
import { rootRouteRef } from './routes';

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
    routeRef: rootRouteRef,
    loader: () => import('./components/PromotionsPage').then((m) => <m.PromotionsPage />),
  },
});

/** "Promotions" tab on catalog Components: versions across environments, last promotions, rollout state. */
export const entityPromotionsContent = EntityContentBlueprint.make({
  params: {
    path: 'promotions',
    title: 'Promotions',
    filter: 'kind:component',
    loader: () => import('./components/EntityPromotionsContent').then((m) => <m.EntityPromotionsContent />),
  },
});

export default createFrontendPlugin({
  pluginId: 'promotions',
  info: { packageJson: () => import('../package.json') },
  routes: { root: rootRouteRef },
  extensions: [promotionsApi, promotionsPage, entityPromotionsContent],
});
