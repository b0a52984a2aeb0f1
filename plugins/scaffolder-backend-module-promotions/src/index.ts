/**
 * Backstage scaffolder module with the kpromo:* template actions.
 *
 * @packageDocumentation
 */
export { createPromotionsTemplateActions } from './actions.js';
export { type PlanRef, PromotionsBackendClient } from './client.js';
export { scaffolderModulePromotions, scaffolderModulePromotions as default } from './module.js';
