/**
 * Port self-service webhook for the kpromo promotions backend plugin (a backend module).
 *
 * @packageDocumentation
 */
export { type PortConfig, type PortResourceAction, readPortConfig } from './config.js';
export { promotionsModulePort, promotionsModulePort as default } from './module.js';
export {
  createPortActionsClient,
  DatabaseReplayGuard,
  PORT_RUNS_TABLE,
  type PortActionsApi,
  PortRunner,
  PortWebhookBody,
  portIdentity,
  ReplayGuard,
  verifyPortSignature,
} from './port.js';
