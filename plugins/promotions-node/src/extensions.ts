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
 * `promotions.controller.byNamespace` (namespace → controller URL), else
 * `promotions.controller.baseUrl`, else `discovery.getBaseUrl('kpromo-controller')`.
 *
 * A locator only says **where**, and only among URLs the config allows: the backend sends its own
 * token (`promotions.controller.token`) to the URL returned here, so an answer that is not
 * `promotions.controller.baseUrl`, a `byNamespace` URL or listed in
 * `promotions.controller.allowedBaseUrls` is refused (503) and nothing is sent. Never build the URL
 * from the namespace (`http://kpromo-controller.${namespace}` names whatever host a caller puts in
 * it); pick it from a fixed table. The namespace is already a Kubernetes namespace name (an RFC 1123
 * label) when a locator is asked: anything else is refused with 400 before. The backend names the
 * Backstage caller (`x-kpromo-user`, `x-kpromo-groups`) after its own permission checks; the
 * locator never sees the caller and cannot add headers or change the identity.
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
 * Lets a backend module (pluginId `promotions`) replace the controller locator. Its answers must be
 * URLs the config allows (`promotions.controller.baseUrl`, `byNamespace`, `allowedBaseUrls`); a
 * table from config is the safe shape (for a plain table, `promotions.controller.byNamespace` needs
 * no module at all):
 *
 * ```ts
 * createBackendModule({
 *   pluginId: 'promotions',
 *   moduleId: 'per-namespace-controllers',
 *   register(env) {
 *     env.registerInit({
 *       deps: { locator: promotionsControllerLocatorExtensionPoint, config: coreServices.rootConfig },
 *       async init({ locator, config }) {
 *         // namespace -> URL, each also listed in promotions.controller.allowedBaseUrls
 *         const table = new Map(
 *           config.getConfigArray('tenants').map((t) => [t.getString('namespace'), t.getString('controller')]),
 *         );
 *         const fallback = config.getString('promotions.controller.baseUrl');
 *         locator.setControllerLocator({
 *           locate: async ({ namespace }) => ({ baseUrl: (namespace && table.get(namespace)) || fallback }),
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
   * Registers an action next to the built-in `create-plan`, `promote`, `continue-wave`, `rollback`
   * and `get-release-status`: same options as `ActionsRegistryService.register`, id
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
