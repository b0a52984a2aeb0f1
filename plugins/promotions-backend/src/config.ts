import type { Config } from '@backstage/config';

/**
 * `promotions:` section of app-config.
 *
 * ```yaml
 * promotions:
 *   controller:
 *     baseUrl: http://kpromo-controller.kpromo:8080   # controller JSON API (else discovery 'kpromo-controller')
 *     mcpUrl: http://kpromo-controller.kpromo:8090/mcp # controller MCP endpoint (for /api/promotions/mcp)
 *     token: ${KPROMO_CONTROLLER_TOKEN}               # the backend's bearer token for the controller (API and MCP)
 *     # mcpToken: ...                                 # deprecated alias of token (used when token is unset)
 *     defaultNamespace: kpromo                        # CR namespace when a call names none
 *   entityRef: 'component:default/{name}'             # catalog entity of an Application ({namespace}, {name})
 *   port:
 *     baseUrl: https://api.getport.io
 *     clientId: ${PORT_CLIENT_ID}
 *     clientSecret: ${PORT_CLIENT_SECRET}             # also the webhook signing key
 *     maxSignatureAgeSeconds: 300
 *     waitTimeoutSeconds: 1800
 * ```
 *
 * `controller.token` is sent as `Authorization: Bearer <token>` on every call to the controller's
 * JSON API and by the MCP proxy: a static token from the controller's `auth.staticTokensFile`, or a
 * Kubernetes ServiceAccount token with audience `kpromo` (`kubectl create token <sa> --audience
 * kpromo`). Its user should hold no kpromo rights of its own, only Kubernetes RBAC `impersonate` on
 * `users` and `groups` (ideally restricted with resourceNames): every call names the Backstage caller
 * in `x-kpromo-user` (+ `x-kpromo-groups`) and the controller authorises it as that caller.
 * `controller.mcpToken` is the deprecated name of the same token (it was only used by the MCP proxy);
 * it is read when `token` is unset.
 */
export interface PromotionsConfig {
  controller: {
    baseUrl?: string;
    mcpUrl?: string;
    /** Bearer token for the controller (JSON API and MCP); `mcpToken` when unset. */
    token?: string;
    /** Set when the token came from the deprecated `mcpToken` key (for a warning at startup). */
    tokenFromDeprecatedKey?: boolean;
    defaultNamespace?: string;
  };
  entityRef: string;
  port?: {
    baseUrl: string;
    clientId: string;
    clientSecret: string;
    maxSignatureAgeSeconds: number;
    waitTimeoutSeconds: number;
    pollIntervalMs: number;
  };
}

export function readPromotionsConfig(root: Config): PromotionsConfig {
  const c = root.getOptionalConfig('promotions');
  const port = c?.getOptionalConfig('port');
  const token = c?.getOptionalString('controller.token');
  const mcpToken = c?.getOptionalString('controller.mcpToken');
  return {
    controller: {
      baseUrl: c?.getOptionalString('controller.baseUrl')?.replace(/\/+$/, ''),
      mcpUrl: c?.getOptionalString('controller.mcpUrl'),
      token: token ?? mcpToken,
      ...(!token && mcpToken ? { tokenFromDeprecatedKey: true } : {}),
      defaultNamespace: c?.getOptionalString('controller.defaultNamespace'),
    },
    entityRef: c?.getOptionalString('entityRef') ?? 'component:default/{name}',
    port: port
      ? {
          baseUrl: port.getOptionalString('baseUrl') ?? 'https://api.getport.io',
          clientId: port.getString('clientId'),
          clientSecret: port.getString('clientSecret'),
          maxSignatureAgeSeconds: port.getOptionalNumber('maxSignatureAgeSeconds') ?? 300,
          waitTimeoutSeconds: port.getOptionalNumber('waitTimeoutSeconds') ?? 1800,
          pollIntervalMs: port.getOptionalNumber('pollIntervalMs') ?? 2000,
        }
      : undefined,
  };
}

/** Catalog entity ref of an Application, from the `promotions.entityRef` template. */
export function entityRefFor(template: string, app: { namespace: string; name: string }): string {
  return template.replaceAll('{namespace}', app.namespace).replaceAll('{name}', app.name).toLowerCase();
}
