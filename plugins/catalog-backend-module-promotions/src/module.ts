import { coreServices, createBackendModule, type LoggerService } from '@backstage/backend-plugin-api';
import { catalogProcessingExtensionPoint } from '@backstage/plugin-catalog-node';
import { kubeConfigs, type Logger, parseConfig } from '@kpromo/exporter';
import { PromotionsEntityProvider } from './provider.js';
import { ENTITY_NAMINGS, type EntityNaming } from './toBackstageEntity.js';

/** pino-style (obj, msg) calls onto Backstage's (msg, meta) logger. */
export function adaptLogger(l: LoggerService): Logger {
  const meta = (o: object) => JSON.parse(JSON.stringify(o, (_k, v) => (v instanceof Error ? v.message : v)));
  return {
    debug: (o, m) => l.debug(m ?? '', meta(o)),
    info: (o, m) => l.info(m ?? '', meta(o)),
    warn: (o, m) => l.warn(m ?? '', meta(o)),
    error: (o, m) => l.error(m ?? '', meta(o)),
    child: (b) => adaptLogger(l.child(meta(b))),
  };
}

/**
 * Catalog module: reads the exporter config from `kpromo.exporter` in app-config (same schema as
 * the exporter's YAML; the `port` section is ignored) and registers the entity provider.
 * `kpromo.catalog.fullSyncSeconds` sets the scheduled full mutation (default 600),
 * `kpromo.catalog.entityNames` how CRs are named (`name`, `namespace` or `qualified`; default `name`)
 * and `kpromo.catalog.defaultOwner` the owner of kinds without a team (default `group:default/platform`).
 */
export const catalogModulePromotions = createBackendModule({
  pluginId: 'catalog',
  moduleId: 'kpromo-promotions',
  register(env) {
    env.registerInit({
      deps: {
        catalog: catalogProcessingExtensionPoint,
        config: coreServices.rootConfig,
        logger: coreServices.logger,
        scheduler: coreServices.scheduler,
        lifecycle: coreServices.lifecycle,
      },
      async init({ catalog, config, logger, scheduler, lifecycle }) {
        const raw = config.getOptionalConfig('kpromo.exporter')?.get();
        if (!raw) {
          logger.warn('kpromo.exporter is not configured; promotions provider disabled');
          return;
        }
        const cfg = await parseConfig(raw, 'app-config kpromo.exporter');
        const naming = config.getOptionalString('kpromo.catalog.entityNames') ?? 'name';
        if (!ENTITY_NAMINGS.includes(naming as EntityNaming))
          throw new Error(`kpromo.catalog.entityNames must be one of ${ENTITY_NAMINGS.join(', ')}, got "${naming}"`);
        const provider = new PromotionsEntityProvider({
          config: cfg,
          clusters: kubeConfigs(cfg),
          log: adaptLogger(logger),
          mapping: {
            naming: naming as EntityNaming,
            defaultOwner: config.getOptionalString('kpromo.catalog.defaultOwner'),
          },
        });
        catalog.addEntityProvider(provider);
        const seconds = config.getOptionalNumber('kpromo.catalog.fullSyncSeconds') ?? 600;
        await scheduler.scheduleTask({
          id: 'kpromo-promotions-full-mutation',
          frequency: { seconds },
          timeout: { seconds: Math.max(60, seconds) },
          initialDelay: { seconds },
          fn: () => provider.fullMutation(),
        });
        lifecycle.addShutdownHook(() => provider.stop());
      },
    });
  },
});
