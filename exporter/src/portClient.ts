import {
  type PortClientOptions as ClientOptions,
  createPortClient as createClient,
  type PortApi,
  type PortClientStats,
  type paths,
} from '@kpromo/port-client';
import type { Logger } from './log.js';

export { type PortApi, type PortClientStats, retryDelayMs } from '@kpromo/port-client';

export interface PortClientOptions extends Omit<ClientOptions, 'onEvent' | 'fetch'> {
  log: Logger;
}

/**
 * The exporter's Port client: @kpromo/port-client (token fetched and refreshed before `expiresIn`
 * and again on 401; 429/5xx/network errors retried with backoff) logging its events at debug level.
 */
export function createPortClient({ log, ...opts }: PortClientOptions): { api: PortApi; stats: PortClientStats } {
  return createClient({ ...opts, onEvent: (e) => log.debug(e, `port ${e.type}`) });
}

/** One entity in a bulk upsert body, as generated from the spec. */
export type PortBulkEntity = NonNullable<
  paths['/v1/blueprints/{blueprint_identifier}/entities/bulk']['post']['requestBody']
>['content']['application/json']['entities'][number];

/**
 * The body item Port is sent for a mapped entity (its `request` when it holds search queries). The
 * generator types free-form `properties` (`{type: object, default: {}}`) as an empty record, so
 * mapped values are passed through this one cast.
 */
export function toPortEntity(
  e: { entity: { identifier: string }; request?: object } | { identifier: string; properties: Record<string, unknown> },
): PortBulkEntity {
  const body = 'entity' in e ? (e.request ?? e.entity) : e;
  return body as unknown as PortBulkEntity;
}
