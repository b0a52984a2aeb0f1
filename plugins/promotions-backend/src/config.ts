import type { DiscoveryService } from '@backstage/backend-plugin-api';
import type { Config } from '@backstage/config';
import { namespaceProblem } from '@kpromo/plugin-promotions-common';
import type { PromotionsControllerLocator } from '@kpromo/plugin-promotions-node';
import { type LlmConfig, readLlmConfig } from './assistant/config.js';

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
 *   port:
 *     baseUrl: https://api.getport.io
 *     clientId: ${PORT_CLIENT_ID}
 *     clientSecret: ${PORT_CLIENT_SECRET}             # also the webhook signing key
 *     maxSignatureAgeSeconds: 300                     # timestamp window; also how long run ids are remembered
 *     maxRecentRuns: 10000                            # run ids remembered at most (replay protection); 503 beyond
 *     actions: { promote: kpromo_promote, rollback: kpromo_rollback } # exact Port action identifiers
 *     namespaces: [kpromo]                            # namespaces runs may act in (default: controller.defaultNamespace)
 *     identity: 'port:{email}'                        # x-kpromo-user of a run ({email}: the trigger user)
 *     waitTimeoutSeconds: 1800
 *     resourceActions:                                # Port actions on custom resources (the exporter's crdsToDiscover)
 *       - blueprint: widget                           # accepts create_widget, update_widget, delete_widget
 *         apiVersion: example.com/v1
 *         plural: widgets
 *     cluster: dev                                    # the exporter's name for the controller's cluster
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
  port?: PortConfig;
  /** `promotions.assistant.llm`: the assistant's model endpoint (src/assistant/config.ts); unset: no chat. */
  assistant?: LlmConfig;
}

/** `promotions.port`: the Port self-service webhook (see src/port.ts). */
export interface PortConfig {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** Accepted clock skew of x-port-timestamp, and how long a run id is remembered against replays. */
  maxSignatureAgeSeconds: number;
  /** At most this many run ids are remembered; a delivery that would need more is refused (503). */
  maxRecentRuns: number;
  /** Exact Port action identifiers: anything else is refused (400). */
  actions: { promote: string; rollback: string };
  /**
   * Namespaces a run may act in. Unset: `controller.defaultNamespace` only, or, when that is unset
   * too, only runs naming no namespace (the controller's own default).
   */
  namespaces?: string[];
  /** The identity a run acts as (x-kpromo-user): `{email}` is the run's trigger user. */
  identity: string;
  waitTimeoutSeconds: number;
  pollIntervalMs: number;
  /**
   * Custom resources Port actions may create, update and delete (through the controller's
   * POST /resources, as the run's identity): action `<operation>_<blueprint>` acts on `apiVersion`
   * `plural`, whatever the run's body says. Empty: none.
   */
  resourceActions: PortResourceAction[];
  /**
   * The exporter's cluster name for the controller's cluster: a run naming a cluster (the entity's
   * `cluster` property, kpromo exporter configs) must name this one. Unset: runs naming one are refused.
   */
  cluster?: string;
}

/** One kind open to Port resource actions, and the action identifiers that act on it. */
export interface PortResourceAction {
  blueprint: string;
  group: string;
  version: string;
  plural: string;
  /** Action identifier → operation: `create_<blueprint>`, `update_<blueprint>`, `delete_<blueprint>`. */
  actions: Record<string, 'create' | 'update' | 'delete'>;
}

/** What an identity template may not contain: list separators and control characters (header/log injection). */
const UNSAFE = /[,\p{Cc}]/u;

function readPortConfig(port: Config): PortConfig {
  const where = (k: string) => `promotions.port.${k}`;
  const positive = (k: string, dflt: number) => {
    const v = port.getOptionalNumber(k) ?? dflt;
    if (!Number.isFinite(v) || v <= 0) throw new Error(`${where(k)} must be a positive number, got ${v}`);
    return v;
  };
  const identifier = (k: string, dflt: string) => {
    const v = port.getOptionalString(k) ?? dflt;
    if (!/^[A-Za-z0-9_-]{1,100}$/.test(v))
      throw new Error(`${where(k)} is not a Port action identifier: ${JSON.stringify(v)}`);
    return v;
  };
  const actions = {
    promote: identifier('actions.promote', 'kpromo_promote'),
    rollback: identifier('actions.rollback', 'kpromo_rollback'),
  };
  if (actions.promote === actions.rollback)
    throw new Error(
      `${where('actions.promote')} and ${where('actions.rollback')} must differ (both ${actions.promote})`,
    );
  const identity = port.getOptionalString('identity') ?? 'port:{email}';
  // One identity per Port user: a template without {email} would make every run the same identity.
  if (identity.split('{email}').length !== 2 || UNSAFE.test(identity) || /^system:/i.test(identity))
    throw new Error(
      `${where('identity')} must contain {email} exactly once, no comma or control character, and not start with system: (got ${JSON.stringify(identity)})`,
    );
  const namespaces = port.getOptionalStringArray('namespaces');
  for (const n of namespaces ?? []) {
    const problem = namespaceProblem(n, where('namespaces'));
    if (problem) throw new Error(problem);
  }
  const resourceActions = readResourceActions(port, where);
  const taken = new Set([actions.promote, actions.rollback]);
  for (const r of resourceActions)
    for (const id of Object.keys(r.actions)) {
      if (taken.has(id)) throw new Error(`${where('resourceActions')}: action ${id} is configured twice`);
      taken.add(id);
    }
  const cluster = port.getOptionalString('cluster');
  if (cluster !== undefined && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(cluster))
    throw new Error(`${where('cluster')}: ${JSON.stringify(cluster)} is not an exporter cluster name ([a-z0-9-])`);
  return {
    baseUrl: port.getOptionalString('baseUrl') ?? 'https://api.getport.io',
    clientId: port.getString('clientId'),
    clientSecret: port.getString('clientSecret'),
    maxSignatureAgeSeconds: positive('maxSignatureAgeSeconds', 300),
    maxRecentRuns: Math.floor(positive('maxRecentRuns', 10_000)),
    actions,
    ...(namespaces ? { namespaces: [...new Set(namespaces)] } : {}),
    identity,
    waitTimeoutSeconds: positive('waitTimeoutSeconds', 1800),
    pollIntervalMs: positive('pollIntervalMs', 2000),
    resourceActions,
    ...(cluster ? { cluster } : {}),
  };
}

const GROUP_VERSION =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+)\/(v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?)$/;

/** `promotions.port.resourceActions`: each entry names a blueprint and the custom resource its actions write. */
function readResourceActions(port: Config, where: (k: string) => string): PortResourceAction[] {
  return (port.getOptionalConfigArray('resourceActions') ?? []).map((c, i) => {
    const at = (k: string) => where(`resourceActions[${i}].${k}`);
    const blueprint = c.getString('blueprint');
    // Port's identifier pattern, minus characters that would make `<op>_<blueprint>` ambiguous.
    if (!/^[A-Za-z0-9@_=-]{1,90}$/.test(blueprint))
      throw new Error(`${at('blueprint')}: ${JSON.stringify(blueprint)} is not a Port blueprint identifier`);
    const apiVersion = c.getString('apiVersion');
    const gv = GROUP_VERSION.exec(apiVersion);
    if (!gv)
      throw new Error(
        `${at('apiVersion')}: ${JSON.stringify(apiVersion)} is not <group>/<version> of a custom resource (e.g. example.com/v1)`,
      );
    const plural = c.getString('plural');
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(plural))
      throw new Error(`${at('plural')}: ${JSON.stringify(plural)} is not a resource's plural name`);
    return {
      blueprint,
      group: gv[1],
      version: gv[5],
      plural,
      actions: {
        [`create_${blueprint}`]: 'create',
        [`update_${blueprint}`]: 'update',
        [`delete_${blueprint}`]: 'delete',
      },
    };
  });
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
  const port = c?.getOptionalConfig('port');
  return {
    controller: readController(c?.getOptionalConfig('controller')),
    entityRef: c?.getOptionalString('entityRef') ?? 'component:default/{name}',
    port: port ? readPortConfig(port) : undefined,
    assistant: readLlmConfig(c?.getOptionalConfig('assistant')),
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
