/**
 * The portal assistant for the kpromo promotions backend plugin (a backend module).
 *
 * @packageDocumentation
 */
export { type LlmConfig, readLlmConfig } from './assistant/config.js';
export { createAssistantRouter } from './assistant/route.js';
export { promotionsModuleAssistant, promotionsModuleAssistant as default } from './module.js';
