import {
  createApiFactory,
  createComponentExtension,
  createPlugin,
  createRoutableExtension,
  createRouteRef,
  discoveryApiRef,
  fetchApiRef,
} from '@backstage/core-plugin-api';
import { PromotionsClient, promotionsApiRef } from '@kpromo/plugin-promotions-react';

const legacyRootRouteRef = createRouteRef({ id: 'promotions' });

export const legacyPromotionsPlugin = createPlugin({
  id: 'promotions',
  apis: [
    createApiFactory({
      api: promotionsApiRef,
      deps: { discoveryApi: discoveryApiRef, fetchApi: fetchApiRef },
      factory: ({ discoveryApi, fetchApi }) => new PromotionsClient({ discoveryApi, fetchApi }),
    }),
  ],
  routes: { root: legacyRootRouteRef },
});

/** Mount at /promotions: `<Route path="/promotions/*" element={<PromotionsPage />} />`. */
export const PromotionsPage = legacyPromotionsPlugin.provide(
  createRoutableExtension({
    name: 'PromotionsPage',
    component: () => import('./components/PromotionsPage').then((m) => m.PromotionsPage),
    mountPoint: legacyRootRouteRef,
  }),
);

/** For the entity page of an Environment (Resource of type kpromo-environment). */
export const EnvironmentPromotionsContent = legacyPromotionsPlugin.provide(
  createComponentExtension({
    name: 'EnvironmentPromotionsContent',
    component: {
      lazy: () => import('./components/EntityPromotionsContent').then((m) => m.EnvironmentPromotionsContent),
    },
  }),
);

/** For the entity page: `<EntityLayout.Route path="/promotions" title="Promotions"><EntityPromotionsContent /></EntityLayout.Route>`. */
export const EntityPromotionsContent = legacyPromotionsPlugin.provide(
  createComponentExtension({
    name: 'EntityPromotionsContent',
    component: { lazy: () => import('./components/EntityPromotionsContent').then((m) => m.EntityPromotionsContent) },
  }),
);
