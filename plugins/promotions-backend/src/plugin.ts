import { coreServices, createBackendPlugin } from '@backstage/backend-plugin-api';
import { actionsRegistryServiceRef } from '@backstage/backend-plugin-api/alpha';
import { promotionsPermissions } from '@kpromo/plugin-promotions-common';
import { registerActions } from './actions.js';
import { createPortActionsClient, PortRunner } from './port.js';
import { createRouter } from './router.js';
import { PromotionsService } from './service.js';

/** The kpromo promotions backend plugin (pluginId `promotions`, routes under /api/promotions). */
export const promotionsPlugin = createBackendPlugin({
  pluginId: 'promotions',
  register(env) {
    env.registerInit({
      deps: {
        config: coreServices.rootConfig,
        discovery: coreServices.discovery,
        permissions: coreServices.permissions,
        permissionsRegistry: coreServices.permissionsRegistry,
        httpAuth: coreServices.httpAuth,
        httpRouter: coreServices.httpRouter,
        logger: coreServices.logger,
        userInfo: coreServices.userInfo,
        actionsRegistry: actionsRegistryServiceRef,
      },
      async init({
        config,
        discovery,
        permissions,
        permissionsRegistry,
        httpAuth,
        httpRouter,
        logger,
        userInfo,
        actionsRegistry,
      }) {
        const service = PromotionsService.create({ config, discovery, permissions, logger, userInfo });
        permissionsRegistry.addPermissions(promotionsPermissions);
        registerActions(actionsRegistry, service);
        const port = service.cfg.port;
        const portRunner = port
          ? new PortRunner(service, port, createPortActionsClient(port), logger.child({ component: 'port' }))
          : undefined;
        if (port && portRunner) {
          const ns = portRunner.namespaces;
          logger.info(
            `Port webhook: actions ${port.actions.promote} / ${port.actions.rollback}, runs act as ${port.identity}, namespaces ${ns ? ns.join(', ') || 'none' : "the controller's default only"}`,
          );
          if (!ns)
            logger.warn(
              'promotions.port.namespaces and promotions.controller.defaultNamespace are unset: Port runs naming a namespace are refused',
            );
        }
        httpRouter.use(createRouter({ service, httpAuth, logger, portRunner }));
        // Port cannot send Backstage tokens; the webhook authenticates with its HMAC signature.
        httpRouter.addAuthPolicy({ path: '/port/webhook', allow: 'unauthenticated' });
      },
    });
  },
});
