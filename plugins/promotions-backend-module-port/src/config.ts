import type { Config } from '@backstage/config';
import { namespaceProblem } from '@kpromo/plugin-promotions-common';

/**
 * `promotions.port` of app-config (the module's config.d.ts has the schema):
 *
 * ```yaml
 * promotions:
 *   port:
 *     baseUrl: https://api.getport.io
 *     clientId: ${PORT_CLIENT_ID}
 *     clientSecret: ${PORT_CLIENT_SECRET}             # also the webhook signing key
 *     maxSignatureAgeSeconds: 300                     # timestamp window; also how long run ids are remembered
 *     maxRecentRuns: 10000                            # run ids remembered at most (replay protection); 503 beyond
 *     actions: { promote: kpromo_promote, rollback: kpromo_rollback, continue: kpromo_continue, stopLine: kpromo_stop_line, resumeLine: kpromo_resume_line, adopt: kpromo_adopt } # exact Port action identifiers
 *     namespaces: [kpromo]                            # namespaces runs may act in (default: controller.defaultNamespace)
 *     identity: 'port:{email}'                        # x-kpromo-user of a run ({email}: the trigger user)
 *     waitTimeoutSeconds: 1800
 *     resourceActions:                                # Port actions on custom resources (the exporter's crdsToDiscover)
 *       - blueprint: widget                           # accepts create_widget, update_widget, delete_widget
 *         apiVersion: example.com/v1
 *         plural: widgets
 *     cluster: dev                                    # the exporter's name for the controller's cluster
 * ```
 */
/** `promotions.port`: the Port self-service webhook (see port.ts). */
export interface PortConfig {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** Accepted clock skew of x-port-timestamp, and how long a run id is remembered against replays. */
  maxSignatureAgeSeconds: number;
  /** At most this many run ids are remembered; a delivery that would need more is refused (503). */
  maxRecentRuns: number;
  /** Exact Port action identifiers: anything else is refused (400). */
  actions: { promote: string; rollback: string; continue: string; stopLine: string; resumeLine: string; adopt: string };
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

export function readPortConfig(port: Config): PortConfig {
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
    stopLine: identifier('actions.stopLine', 'kpromo_stop_line'),
    resumeLine: identifier('actions.resumeLine', 'kpromo_resume_line'),
    adopt: identifier('actions.adopt', 'kpromo_adopt'),
    continue: identifier('actions.continue', 'kpromo_continue'),
  };
  const ids = Object.entries(actions);
  for (const [k, v] of ids) {
    const twin = ids.find(([k2, v2]) => k2 !== k && v2 === v);
    if (twin) throw new Error(`${where(`actions.${k}`)} and ${where(`actions.${twin[0]}`)} must differ (both ${v})`);
  }
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
  const taken = new Set(Object.values(actions));
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
