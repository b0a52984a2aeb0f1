import { createExtensionPoint } from '@backstage/backend-plugin-api';
import type { Router } from 'express';
import type { PromotionsOperations } from './operations.js';

/** A backend module's routes, mounted in the promotions plugin's router. */
export interface PromotionsModuleRoutes {
  /** Where, under the plugin's base (/api/promotions), e.g. `/port/webhook` or `/assistant`. */
  path: string;
  /**
   * `unauthenticated`: the module authenticates every request itself (a webhook's signature), so
   * the plugin lets requests without Backstage credentials through to it. Default: Backstage's
   * default policy (a user or service token required); the router still asks `httpAuth` who it is.
   */
  auth?: 'unauthenticated';
  /**
   * Builds the router when the plugin starts, with the operations the plugin's own routes use.
   * It is mounted before the plugin's JSON body parser: it parses its own bodies (a webhook
   * verifies its signature over the raw bytes).
   */
  create(operations: PromotionsOperations): Router | Promise<Router>;
}

/** Adds routes to the promotions plugin (Backstage's pattern for webhook and feature modules). */
export interface PromotionsRoutesExtensionPoint {
  /** Throws when another module already took `path`. */
  addRoutes(routes: PromotionsModuleRoutes): void;
}

/**
 * Lets a backend module (pluginId `promotions`) serve routes under /api/promotions with the
 * plugin's operations: `@kpromo/plugin-promotions-backend-module-port` (the Port self-service
 * webhook) and `-module-assistant` (the portal assistant's chat) are built on it.
 */
export const promotionsRoutesExtensionPoint = createExtensionPoint<PromotionsRoutesExtensionPoint>({
  id: 'promotions.routes',
});
