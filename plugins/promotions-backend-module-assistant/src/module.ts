import { coreServices, createBackendModule } from '@backstage/backend-plugin-api';
import { promotionsRoutesExtensionPoint } from '@kpromo/plugin-promotions-node';
import { readLlmConfig } from './assistant/config.js';
import { createAssistantRouter } from './assistant/route.js';

/**
 * The portal assistant for the promotions plugin: `GET /api/promotions/assistant` (whether chat is
 * configured) and `POST /api/promotions/assistant/chat` (an OpenAI-compatible model, server-side,
 * with the controller's MCP tools as the signed-in user sees them; changes wait for the user's
 * confirmation). Without `promotions.assistant.llm` the panel offers tool forms only.
 *
 * ```ts
 * backend.add(import('@kpromo/plugin-promotions-backend'));
 * backend.add(import('@kpromo/plugin-promotions-backend-module-assistant'));
 * ```
 */
export const promotionsModuleAssistant = createBackendModule({
  pluginId: 'promotions',
  moduleId: 'assistant',
  register(env) {
    env.registerInit({
      deps: {
        routes: promotionsRoutesExtensionPoint,
        config: coreServices.rootConfig,
        httpAuth: coreServices.httpAuth,
        logger: coreServices.logger,
      },
      async init({ routes, config, httpAuth, logger }) {
        const llm = readLlmConfig(config.getOptionalConfig('promotions.assistant'));
        routes.addRoutes({
          path: '/assistant',
          create: (service) => createAssistantRouter({ service, llm, httpAuth, logger }),
        });
      },
    });
  },
});
