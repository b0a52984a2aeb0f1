import { coreServices, createBackendPlugin } from '@backstage/backend-plugin-api';
import { type ActionsRegistryService, actionsRegistryServiceRef } from '@backstage/backend-plugin-api/alpha';
import { promotionsPermissions } from '@kpromo/plugin-promotions-common';
import {
  type PromotionsControllerLocator,
  type PromotionsModuleRoutes,
  promotionsActionsExtensionPoint,
  promotionsControllerLocatorExtensionPoint,
  promotionsRoutesExtensionPoint,
} from '@kpromo/plugin-promotions-node';
import { registerActions } from './actions.js';
import { createRouter } from './router.js';
import { PromotionsService } from './service.js';

/**
 * The kpromo promotions backend plugin (pluginId `promotions`, routes under /api/promotions).
 * Extension points (`@kpromo/plugin-promotions-node`): `promotionsControllerLocatorExtensionPoint`
 * (where the controller is; default: `promotions.controller.baseUrl` / discovery),
 * `promotionsActionsExtensionPoint` (more actions in the plugin's actions registry) and
 * `promotionsRoutesExtensionPoint` (routes of backend modules, with the plugin's operations: the
 * Port webhook and the assistant are such modules).
 */
export const promotionsPlugin = createBackendPlugin({
  pluginId: 'promotions',
  register(env) {
    let locator: PromotionsControllerLocator | undefined;
    const moduleActions: Array<(registry: ActionsRegistryService) => void> = [];
    const moduleRoutes: PromotionsModuleRoutes[] = [];
    // Modules initialise before the plugin: both are settled by the time init below runs.
    let started = false;
    const open = (what: string) => {
      if (started) throw new Error(`promotions: ${what} is only possible while backend modules initialise`);
    };
    env.registerExtensionPoint(promotionsControllerLocatorExtensionPoint, {
      setControllerLocator(l) {
        open('setControllerLocator');
        if (locator) throw new Error('promotions: a controller locator is already set (only one module may set it)');
        locator = l;
      },
    });
    env.registerExtensionPoint(promotionsActionsExtensionPoint, {
      addAction(options) {
        open('addAction');
        moduleActions.push((registry) => registry.register(options));
      },
    });
    env.registerExtensionPoint(promotionsRoutesExtensionPoint, {
      addRoutes(routes) {
        open('addRoutes');
        if (!routes.path.startsWith('/') || routes.path === '/')
          throw new Error(`promotions: a module's routes need a path below the plugin's, got ${routes.path}`);
        const taken = moduleRoutes.find((r) => r.path === routes.path);
        if (taken) throw new Error(`promotions: routes at ${routes.path} are already added by another module`);
        moduleRoutes.push(routes);
      },
    });
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
        started = true;
        const service = PromotionsService.create({ config, discovery, permissions, logger, userInfo, locator });
        if (locator)
          logger.info('kpromo controller located by a backend module (promotionsControllerLocatorExtensionPoint)');
        permissionsRegistry.addPermissions(promotionsPermissions);
        registerActions(actionsRegistry, service);
        for (const add of moduleActions) add(actionsRegistry);
        const modules = await Promise.all(
          moduleRoutes.map(async (r) => ({ path: r.path, router: await r.create(service) })),
        );
        httpRouter.use(createRouter({ service, httpAuth, logger, modules }));
        for (const r of moduleRoutes)
          if (r.auth === 'unauthenticated') httpRouter.addAuthPolicy({ path: r.path, allow: 'unauthenticated' });
      },
    });
  },
});
