import { createExtensionPoint } from '@backstage/backend-plugin-api';
import type { ActionsRegistryService } from '@backstage/backend-plugin-api/alpha';

/** What a controller call is for, as far as the locator needs to know. */
export interface PromotionsControllerLocateRequest {
  /**
   * Namespace of the kpromo CRs the call is about; undefined when the caller named none and
   * `promotions.controller.defaultNamespace` is unset (the controller then uses its own default).
   */
  namespace?: string;
}

/** Where the backend sends a controller call. */
export interface PromotionsControllerLocation {
  /** Root of the controller's JSON API, without `/api/v1`, e.g. `http://kpromo-controller.kpromo:8080`. */
  baseUrl: string;
}

/**
 * Finds the kpromo controller for a call of the promotions backend. The default reads
 * `promotions.controller.baseUrl`, else `discovery.getBaseUrl('kpromo-controller')`.
 *
 * A locator only says **where**. The backend itself still authenticates every call with its own
 * token (`promotions.controller.token`) and names the Backstage caller (`x-kpromo-user`,
 * `x-kpromo-groups`) after its own permission checks; the locator never sees the caller and cannot
 * add headers or change the identity, so the controller keeps authorising each call as the caller.
 * Since that token is sent to the URL returned here, install only locators you trust with it.
 *
 * `locate` runs for every controller call (cache inside the locator if discovery is expensive).
 * Only the JSON API calls go through it: the MCP proxy keeps `promotions.controller.mcpUrl`.
 */
export interface PromotionsControllerLocator {
  locate(request: PromotionsControllerLocateRequest): Promise<PromotionsControllerLocation>;
}

/** Replaces how the promotions backend finds the controller (one locator per backend). */
export interface PromotionsControllerLocatorExtensionPoint {
  /** Throws if another module already set a locator. */
  setControllerLocator(locator: PromotionsControllerLocator): void;
}

/**
 * Lets a backend module (pluginId `promotions`) replace the controller locator.
 *
 * ```ts
 * createBackendModule({
 *   pluginId: 'promotions',
 *   moduleId: 'per-namespace-controllers',
 *   register(env) {
 *     env.registerInit({
 *       deps: { locator: promotionsControllerLocatorExtensionPoint },
 *       async init({ locator }) {
 *         locator.setControllerLocator({
 *           locate: async ({ namespace }) => ({ baseUrl: `http://kpromo-controller.${namespace ?? 'kpromo'}:8080` }),
 *         });
 *       },
 *     });
 *   },
 * });
 * ```
 */
export const promotionsControllerLocatorExtensionPoint =
  createExtensionPoint<PromotionsControllerLocatorExtensionPoint>({
    id: 'promotions.controller-locator',
  });

/** Adds actions to the promotions plugin's actions registry. */
export interface PromotionsActionsExtensionPoint {
  /**
   * Registers an action next to the built-in `create-plan`, `promote`, `rollback` and
   * `get-release-status`: same options as `ActionsRegistryService.register`, id
   * `promotions:<name>` (a name already taken fails the backend's startup). The action gets the
   * caller's `credentials`; it does its own permission checks.
   */
  addAction: ActionsRegistryService['register'];
}

/**
 * Lets a backend module (pluginId `promotions`) add actions to the plugin's actions registry, which
 * `@backstage/plugin-mcp-actions-backend` exposes as MCP tools.
 */
export const promotionsActionsExtensionPoint = createExtensionPoint<PromotionsActionsExtensionPoint>({
  id: 'promotions.actions',
});
