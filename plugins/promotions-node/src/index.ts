/**
 * Node library of the kpromo promotions backend plugin: the extension points its backend modules use.
 *
 * @packageDocumentation
 */
export {
  type PromotionsActionsExtensionPoint,
  type PromotionsControllerLocateRequest,
  type PromotionsControllerLocation,
  type PromotionsControllerLocator,
  type PromotionsControllerLocatorExtensionPoint,
  promotionsActionsExtensionPoint,
  promotionsControllerLocatorExtensionPoint,
} from './extensions.js';
export {
  type Actor,
  actorHeaders,
  callerIdentity,
  type PromotionsCaller,
  type PromotionsOperations,
} from './operations.js';
export {
  type PromotionsModuleRoutes,
  type PromotionsRoutesExtensionPoint,
  promotionsRoutesExtensionPoint,
} from './routes.js';
