export { registerActions } from './actions.js';
export { configControllerLocator, entityRefFor, type PromotionsConfig, readPromotionsConfig } from './config.js';
export { type Actor, actorHeaders, ControllerClient } from './controllerClient.js';
export { createMcpProxy } from './mcpProxy.js';
export { promotionsPlugin, promotionsPlugin as default } from './plugin.js';
export { createRouter } from './router.js';
export { type Caller, identityOf, PromotionsService } from './service.js';
