export * from './backoff.js';
export * from './client.js';
export type { components, operations, paths } from './generated/port.js';
