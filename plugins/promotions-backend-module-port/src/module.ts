import { coreServices, createBackendModule } from '@backstage/backend-plugin-api';
import { promotionsRoutesExtensionPoint } from '@kpromo/plugin-promotions-node';
import express from 'express';
import Router from 'express-promise-router';
import { readPortConfig } from './config.js';
import { createPortActionsClient, DatabaseReplayGuard, PortRunner } from './port.js';

/**
 * Port self-service actions for the promotions plugin: `POST /api/promotions/port/webhook` receives
 * Port's signed action runs (promote, rollback, custom-resource actions), acts through the plugin's
 * operations as the run's identity and reports the run's progress back to Port. Without
 * `promotions.port` in config the route answers 503.
 *
 * ```ts
 * backend.add(import('@kpromo/plugin-promotions-backend'));
 * backend.add(import('@kpromo/plugin-promotions-backend-module-port'));
 * ```
 */
export const promotionsModulePort = createBackendModule({
  pluginId: 'promotions',
  moduleId: 'port',
  register(env) {
    env.registerInit({
      deps: {
        routes: promotionsRoutesExtensionPoint,
        config: coreServices.rootConfig,
        database: coreServices.database,
        logger: coreServices.logger,
      },
      async init({ routes, config, database, logger }) {
        const section = config.getOptionalConfig('promotions.port');
        const port = section ? readPortConfig(section) : undefined;
        const log = logger.child({ component: 'port' });
        routes.addRoutes({
          path: '/port/webhook',
          // Port cannot send Backstage tokens; the webhook authenticates with its HMAC signature.
          auth: 'unauthenticated',
          async create(operations) {
            // Port run ids live in the plugin's database, shared by every replica: a run delivered to
            // two replicas acts once (the second insert of its id fails: 409).
            const runner = port
              ? new PortRunner(
                  operations,
                  port,
                  createPortActionsClient(port),
                  log,
                  Date.now,
                  await DatabaseReplayGuard.create(await database.getClient(), {
                    windowMs: port.maxSignatureAgeSeconds * 1000,
                    maxEntries: port.maxRecentRuns,
                    skipMigrations: database.migrations?.skip,
                  }),
                )
              : undefined;
            if (port && runner) {
              const ns = runner.namespaces;
              log.info(
                `Port webhook: actions ${port.actions.promote} / ${port.actions.rollback}, runs act as ${port.identity}, namespaces ${ns ? ns.join(', ') || 'none' : "the controller's default only"}`,
              );
              if (!ns)
                log.warn(
                  'promotions.port.namespaces and promotions.controller.defaultNamespace are unset: Port runs naming a namespace are refused',
                );
            } else log.info('promotions.port is not configured: the Port webhook answers 503');
            const router = Router();
            router.post('/', express.raw({ type: '*/*', limit: '1mb' }), async (req, res) => {
              if (!runner)
                return void res
                  .status(503)
                  .json({ error: { name: 'NotConfigured', message: 'promotions.port is not configured' } });
              const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
              const work = await runner.prepare(raw, {
                signature: req.header('x-port-signature'),
                timestamp: req.header('x-port-timestamp'),
              });
              res.status(202).json({ accepted: true });
              void work();
            });
            return router;
          },
        });
      },
    });
  },
});
