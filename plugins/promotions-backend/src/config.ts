import type { DiscoveryService } from '@backstage/backend-plugin-api';
import type { Config } from '@backstage/config';
import { namespaceProblem } from '@kpromo/plugin-promotions-common';
import type { PromotionsControllerLocator } from '@kpromo/plugin-promotions-node';

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
 *     byNamespace:                                    # optional: other controllers for some namespaces (allow-list)
 *       - namespaces: [team-a, team-b]
 *         baseUrl: http://kpromo-controller.team-a.svc:8080
 *     allowedBaseUrls: []                             # more URLs a module's locator may return (besides the above)
 *     mcpSessions: { maxSessions: 10000, maxSessionsPerPrincipal: 20, idleTimeoutSeconds: 1800 } # MCP proxy bounds
 *   entityRef: 'component:default/{name}'             # catalog entity of an Application ({namespace}, {name})
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
    /**
     * `promotions.controller.byNamespace`: the controller of these namespaces, instead of `baseUrl`.
     * Fixed in config, never built from a request: the backend's token goes only to these URLs.
     */
    byNamespace?: Array<{ namespaces: string[]; baseUrl: string }>;
    /**
     * Every URL a controller call may go to (normalised, no trailing slash): `baseUrl`, the
     * `byNamespace` URLs and `allowedBaseUrls`. A module's locator answering anything else is refused.
     */
    allowedBaseUrls?: string[];
    /** `promotions.controller.mcpSessions`: bounds of the MCP proxy's session table. */
    mcpSessions?: { maxSessions: number; maxSessionsPerPrincipal: number; idleTtlMs: number };
  };
  entityRef: string;
}

/**
 * A controller URL as configured or located, normalised for comparison (lower-case scheme and host,
 * default port dropped, no trailing slash), or undefined when it is not an http(s) URL without
 * credentials, query or fragment.
 */
export function controllerUrl(value: string | undefined): string | undefined {
  if (!value || !/^https?:\/\/[^/]/i.test(value)) return undefined;
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return undefined;
  }
  if (u.username || u.password || u.search || u.hash) return undefined;
  return `${u.origin}${u.pathname}`.replace(/\/+$/, '');
}

function readControllerUrl(c: Config, key: string, where: string): string {
  const v = c.getString(key);
  const url = controllerUrl(v);
  if (!url)
    throw new Error(
      `${where}: ${JSON.stringify(v)} is not an http(s) URL of the controller (no credentials, query or fragment)`,
    );
  return url;
}

/** `promotions.controller`: where the controller is, and every URL the backend's token may go to. */
function readController(c: Config | undefined): PromotionsConfig['controller'] {
  const where = (k: string) => `promotions.controller.${k}`;
  const token = c?.getOptionalString('token');
  const mcpToken = c?.getOptionalString('mcpToken');
  const baseUrl = c?.getOptionalString('baseUrl') ? readControllerUrl(c, 'baseUrl', where('baseUrl')) : undefined;
  const defaultNamespace = c?.getOptionalString('defaultNamespace');
  const nsProblem = defaultNamespace === undefined ? undefined : namespaceProblem(defaultNamespace);
  if (nsProblem) throw new Error(`${where('defaultNamespace')}: ${nsProblem}`);
  const seen = new Set<string>();
  const byNamespace = (c?.getOptionalConfigArray('byNamespace') ?? []).map((e, i) => {
    const at = (k: string) => where(`byNamespace[${i}].${k}`);
    const namespaces = e.getStringArray('namespaces');
    if (!namespaces.length) throw new Error(`${at('namespaces')} must name at least one namespace`);
    for (const n of namespaces) {
      const problem = namespaceProblem(n, at('namespaces'));
      if (problem) throw new Error(problem);
      if (seen.has(n))
        throw new Error(`${at('namespaces')}: namespace ${n} is listed twice in ${where('byNamespace')}`);
      seen.add(n);
    }
    return { namespaces, baseUrl: readControllerUrl(e, 'baseUrl', at('baseUrl')) };
  });
  const extra = (c?.getOptionalStringArray('allowedBaseUrls') ?? []).map((v, i) => {
    const url = controllerUrl(v);
    if (!url)
      throw new Error(
        `${where(`allowedBaseUrls[${i}]`)}: ${JSON.stringify(v)} is not an http(s) URL of the controller`,
      );
    return url;
  });
  const sessionLimit = (k: string, dflt: number) => {
    const v = c?.getOptionalNumber(`mcpSessions.${k}`) ?? dflt;
    if (!Number.isFinite(v) || v <= 0)
      throw new Error(`${where(`mcpSessions.${k}`)} must be a positive number, got ${v}`);
    return v;
  };
  return {
    baseUrl,
    mcpUrl: c?.getOptionalString('mcpUrl'),
    mcpSessions: {
      maxSessions: Math.floor(sessionLimit('maxSessions', 10_000)),
      maxSessionsPerPrincipal: Math.floor(sessionLimit('maxSessionsPerPrincipal', 20)),
      idleTtlMs: sessionLimit('idleTimeoutSeconds', 1800) * 1000,
    },
    token: token ?? mcpToken,
    ...(!token && mcpToken ? { tokenFromDeprecatedKey: true } : {}),
    defaultNamespace,
    byNamespace,
    allowedBaseUrls: [...new Set([...(baseUrl ? [baseUrl] : []), ...byNamespace.map((b) => b.baseUrl), ...extra])],
  };
}

export function readPromotionsConfig(root: Config): PromotionsConfig {
  const c = root.getOptionalConfig('promotions');
  return {
    controller: readController(c?.getOptionalConfig('controller')),
    entityRef: c?.getOptionalString('entityRef') ?? 'component:default/{name}',
  };
}

/**
 * The default controller locator, an allow-list: the `promotions.controller.byNamespace` entry that
 * lists the call's namespace, else `promotions.controller.baseUrl`, else
 * `discovery.getBaseUrl('kpromo-controller')`. Every URL comes from config (or discovery), none
 * from the request: the namespace only picks one of them. A backend module replaces it through
 * `promotionsControllerLocatorExtensionPoint` (`@kpromo/plugin-promotions-node`); its answers must
 * then be in `allowedBaseUrls` ({@link PromotionsConfig}).
 */
export function configControllerLocator(
  cfg: PromotionsConfig,
  discovery: DiscoveryService,
): PromotionsControllerLocator {
  const byNamespace = new Map(
    (cfg.controller.byNamespace ?? []).flatMap((b) => b.namespaces.map((n) => [n, b.baseUrl])),
  );
  const base = cfg.controller.baseUrl;
  return {
    locate: async ({ namespace }) => ({
      baseUrl:
        (namespace !== undefined ? byNamespace.get(namespace) : undefined) ??
        (base || (await discovery.getBaseUrl('kpromo-controller'))),
    }),
  };
}

/** Catalog entity ref of an Application, from the `promotions.entityRef` template. */
export function entityRefFor(template: string, app: { namespace: string; name: string }): string {
  return template.replaceAll('{namespace}', app.namespace).replaceAll('{name}', app.name).toLowerCase();
}
