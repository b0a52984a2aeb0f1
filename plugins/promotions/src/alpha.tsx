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

export default createFrontendPlugin({
  pluginId: 'promotions',
  info: { packageJson: () => import('../package.json') },
  routes: { root: rootRouteRef },
  extensions: [promotionsApi, promotionsPage, entityPromotionsContent],
});
