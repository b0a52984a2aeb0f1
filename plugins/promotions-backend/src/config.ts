import type { Config } from '@backstage/config';

/**
 * `promotions:` section of app-config.
 *
 * ```yaml
 * promotions:
 *   controller:
 *     baseUrl: http://kpromo-controller.kpromo:8080   # controller JSON API (else discovery 'kpromo-controller')
 *     mcpUrl: http://kpromo-controller.kpromo:8090/mcp # controller MCP endpoint (for /api/promotions/mcp)
 *     mcpToken: ${KPROMO_MCP_TOKEN}                   # a static token from the controller's mcp.staticTokensFile
 *     defaultNamespace: kpromo                        # CR namespace when a call names none
 *   entityRef: 'component:default/{name}'             # catalog entity of an Application ({namespace}, {name})
 *   port:
 *     baseUrl: https://api.getport.io
 *     clientId: ${PORT_CLIENT_ID}
 *     clientSecret: ${PORT_CLIENT_SECRET}             # also the webhook signing key
 *     maxSignatureAgeSeconds: 300
 *     waitTimeoutSeconds: 1800
 * ```
 */
export interface PromotionsConfig {
  controller: {
    baseUrl?: string;
    mcpUrl?: string;
    mcpToken?: string;
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
  return {
    controller: {
      baseUrl: c?.getOptionalString('controller.baseUrl')?.replace(/\/+$/, ''),
      mcpUrl: c?.getOptionalString('controller.mcpUrl'),
      mcpToken: c?.getOptionalString('controller.mcpToken'),
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
