export { registerActions } from './actions.js';
export { entityRefFor, type PromotionsConfig, readPromotionsConfig } from './config.js';
export { type Actor, actorHeaders, ControllerClient } from './controllerClient.js';
export { createMcpProxy } from './mcpProxy.js';
export { promotionsPlugin, promotionsPlugin as default } from './plugin.js';
export { createPortActionsClient, PortRunner, PortWebhookBody, verifyPortSignature } from './port.js';
export { createRouter } from './router.js';
export { createPromotionsTemplateActions, scaffolderModulePromotions } from './scaffolder.js';
export { type Caller, identityOf, PromotionsService } from './service.js';
