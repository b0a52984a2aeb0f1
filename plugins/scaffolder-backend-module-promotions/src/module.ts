import { coreServices, createBackendModule } from '@backstage/backend-plugin-api';
import { scaffolderActionsExtensionPoint } from '@backstage/plugin-scaffolder-node';
import { createPromotionsTemplateActions } from './actions.js';
import { PromotionsBackendClient } from './client.js';

/**
 * Scaffolder module (pluginId `scaffolder`): registers `kpromo:plan:create`, `kpromo:plan:promote`,
 * `kpromo:plan:continue`, `kpromo:plan:rollback`, `kpromo:release:status` and `kpromo:adopt:propose`, which call the promotions backend plugin on
 * behalf of the task's initiator.
 */
export const scaffolderModulePromotions = createBackendModule({
  pluginId: 'scaffolder',
  moduleId: 'promotions',
  register(env) {
    env.registerInit({
      deps: {
        scaffolder: scaffolderActionsExtensionPoint,
        auth: coreServices.auth,
        discovery: coreServices.discovery,
        config: coreServices.rootConfig,
      },
      async init({ scaffolder, auth, discovery, config }) {
        scaffolder.addActions(
          ...createPromotionsTemplateActions({
            client: new PromotionsBackendClient({ auth, discovery }),
            defaultNamespace: config.getOptionalString('promotions.controller.defaultNamespace'),
          }),
        );
      },
    });
  },
});
