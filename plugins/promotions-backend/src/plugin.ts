import { coreServices, createBackendPlugin } from '@backstage/backend-plugin-api';
import { type ActionsRegistryService, actionsRegistryServiceRef } from '@backstage/backend-plugin-api/alpha';
import { promotionsPermissions } from '@kpromo/plugin-promotions-common';
import {
  type PromotionsControllerLocator,
  promotionsActionsExtensionPoint,
  promotionsControllerLocatorExtensionPoint,
} from '@kpromo/plugin-promotions-node';
import { registerActions } from './actions.js';
import { createPortActionsClient, DatabaseReplayGuard, PortRunner } from './port.js';
import { createRouter } from './router.js';
import { PromotionsService } from './service.js';

/**
 * The kpromo promotions backend plugin (pluginId `promotions`, routes under /api/promotions).
 * Extension points (`@kpromo/plugin-promotions-node`): `promotionsControllerLocatorExtensionPoint`
 * (where the controller is; default: `promotions.controller.baseUrl` / discovery) and
 * `promotionsActionsExtensionPoint` (more actions in the plugin's actions registry).
 */
export const promotionsPlugin = createBackendPlugin({
  pluginId: 'promotions',
  register(env) {
    let locator: PromotionsControllerLocator | undefined;
    const moduleActions: Array<(registry: ActionsRegistryService) => void> = [];
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
    env.registerInit({
      deps: {
        config: coreServices.rootConfig,
        database: coreServices.database,
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
        database,
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
        const port = service.cfg.port;
        // Port run ids live in the plugin's database, shared by every replica: a run delivered to
        // two replicas acts once (the second insert of its id fails: 409).
        const portRunner = port
          ? new PortRunner(
              service,
              port,
              createPortActionsClient(port),
              logger.child({ component: 'port' }),
              Date.now,
              await DatabaseReplayGuard.create(await database.getClient(), {
                windowMs: port.maxSignatureAgeSeconds * 1000,
                maxEntries: port.maxRecentRuns,
                skipMigrations: database.migrations?.skip,
              }),
            )
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
