import { readFileSync } from 'node:fs';
import Ajv, { type ErrorObject } from 'ajv';
import { parse } from 'yaml';
import { DEFAULT_BLUEPRINTS, DEFAULT_RESOURCES } from './defaults.js';
import { checkExpressions, DEFAULT_ALLOWED_ENV, type JqEnvOptions } from './jq.js';
import { parseKind } from './resourceKind.js';

/**
 * A jq expression, or a tree of them: the shape Port's exporter accepts for identifiers, teams and
 * relations given as search queries (`{combinator, rules: [{property, operator, value}]}`) and for
 * relations given as lists. Every string leaf is a jq expression (pkg/jq/parser.go,
 * ParseMapRecursively).
 */
export type JqTree = string | JqTree[] | { [key: string]: JqTree };

export interface EntityMapping {
  /** jq expression, or a search query whose leaves are jq expressions. */
  identifier: string | { [key: string]: JqTree };
  title?: string;
  blueprint: string;
  /** jq expression (string or list of strings), or a search query. */
  team?: string | { [key: string]: JqTree };
  icon?: string;
  /** `"*"` merges an object result into the properties (explicit keys win). */
  properties?: Record<string, string>;
  /** jq expression, list of them, or a search query. */
  relations?: Record<string, JqTree>;
}

export interface ResourceConfig {
  kind: string;
  selector?: { query?: string };
  port: {
    itemsToParse?: string;
    /** Key each item is put under in the object (default `item`). */
    itemsToParseName?: string;
    entity: { mappings: EntityMapping[] };
  };
}

export interface BlueprintConfig {
  identifier: string;
  title: string;
  icon?: string;
  schema: {
    properties: Record<string, { title?: string; type: 'string' | 'number' | 'boolean' | 'object' | 'array' }>;
    required?: string[];
  };
  relations?: Record<string, { title?: string; target: string; required: boolean; many: boolean }>;
}

export interface ClusterConfig {
  name: string;
  context?: string;
  kubeconfig?: string;
}

/**
 * `kpromo`: this exporter's own file (has `clusters`); entities carry the state-key property.
 * `port-k8s-exporter`: Port's exporter file as is (no `clusters`): one cluster from the current
 * kubeconfig context, no kpromo defaults, ownership through the entity's datasource as Port's
 * exporter does, null properties sent with `merge=true`.
 */
export type ConfigDialect = 'kpromo' | 'port-k8s-exporter';

export interface ExporterConfig {
  dialect: ConfigDialect;
  stateKey: string;
  clusters: ClusterConfig[];
  port: {
    baseUrl: string;
    clientId?: string;
    clientSecret?: string;
    concurrency: number;
    createBlueprints: boolean;
    /** A lone live change (no other expected soon) waits this long to share jq and bulk calls. */
    batchWindowMs: number;
    /**
     * In a stream (the recent rate brings another change within this time), live changes wait up to
     * this long from the first for others to share the bulk call (a full bulk goes at once): the
     * bound on a change's wait. At most `batchWindowMs`: never.
     */
    maxBatchDelayMs: number;
  };
  resyncIntervalSeconds: number;
  includeDefaults: boolean;
  blueprints: BlueprintConfig[];
  resources: ResourceConfig[];
  crdsToDiscover?: string;
  /**
   * Where the self-service actions of discovered CRDs send their runs (WEBHOOK): the promotions
   * backend's Port webhook. Unset: no actions are created.
   */
  actionsWebhookUrl?: string;
  /** Replace existing actions of discovered CRDs in Port (otherwise they are left as they are). */
  overwriteCrdsActions: boolean;
  /** `delete_dependents` on Port's delete calls. */
  deleteDependents: boolean;
  /** `create_missing_related_entities` on Port's upsert calls. */
  createMissingRelatedEntities: boolean;
  /** Which environment variables jq's `env`/`$ENV` see. */
  jqEnv: Required<JqEnvOptions>;
  /** Port's exporter keys accepted without effect here, with why (logged at start). */
  warnings: string[];
}

const NAME = '^[A-Za-z0-9@_=-]+$';
const jqTree = {
  $id: 'jqTree',
  anyOf: [
    { type: 'string', minLength: 1 },
    { type: 'array', items: { $ref: 'jqTree' } },
    { type: 'object', additionalProperties: { $ref: 'jqTree' } },
  ],
};
const queryObject = { type: 'object', additionalProperties: { $ref: 'jqTree' } };
const mappingSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['identifier', 'blueprint'],
  properties: {
    identifier: { anyOf: [{ type: 'string', minLength: 1 }, queryObject] },
    title: { type: 'string' },
    blueprint: { type: 'string', minLength: 1 },
    team: { anyOf: [{ type: 'string' }, queryObject] },
    icon: { type: 'string' },
    properties: {
      type: 'object',
      propertyNames: { anyOf: [{ pattern: NAME }, { const: '*' }] },
      additionalProperties: { type: 'string', minLength: 1 },
    },
    relations: {
      type: 'object',
      propertyNames: { pattern: NAME },
      additionalProperties: { $ref: 'jqTree' },
    },
  },
};

/** Port's exporter keys (pkg/port/models.go: Config and IntegrationAppConfig). */
const portKeys = {
  resyncInterval: { type: 'integer', minimum: 0 },
  eventListenerType: { type: 'string' },
  createDefaultResources: { type: 'boolean' },
  createPortResourcesOrigin: { type: 'string' },
  overwriteConfigurationOnRestart: { type: 'boolean' },
  overwriteCrdsActions: { type: 'boolean' },
  deleteDependents: { type: 'boolean' },
  createMissingRelatedEntities: { type: 'boolean' },
  updateEntityOnlyOnDiff: { type: 'boolean' },
  sendRawDataExamples: { type: 'boolean' },
  allowAllEnvironmentVariablesInJQ: { type: 'boolean' },
  allowedEnvironmentVariablesInJQ: { type: 'array', items: { type: 'string' } },
};

const configSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    stateKey: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,63}$' },
    clusters: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name'],
        properties: {
          name: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' },
          context: { type: 'string', minLength: 1 },
          kubeconfig: { type: 'string', minLength: 1 },
        },
      },
    },
    port: {
      type: 'object',
      additionalProperties: false,
      properties: {
        baseUrl: { type: 'string', pattern: '^https?://' },
        clientId: { type: 'string' },
        clientSecret: { type: 'string' },
        concurrency: { type: 'integer', minimum: 1, maximum: 32 },
        createBlueprints: { type: 'boolean' },
        batchWindowMs: { type: 'integer', minimum: 0, maximum: 5000 },
        maxBatchDelayMs: { type: 'integer', minimum: 0, maximum: 10000 },
      },
    },
    resyncIntervalSeconds: { type: 'integer', minimum: 0 },
    includeDefaults: { type: 'boolean' },
    crdsToDiscover: { type: 'string' },
    actionsWebhookUrl: { type: 'string', pattern: '^https?://[^\\s]+$' },
    ...portKeys,
    blueprints: {
      type: 'array',
      items: {
        type: 'object',
        required: ['identifier', 'title', 'schema'],
        additionalProperties: false,
        properties: {
          identifier: { type: 'string', pattern: NAME },
          title: { type: 'string', minLength: 1 },
          icon: { type: 'string' },
          schema: { type: 'object' },
          relations: { type: 'object' },
        },
      },
    },
    resources: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['kind', 'port'],
        properties: {
          kind: { type: 'string', minLength: 3 },
          selector: {
            type: 'object',
            additionalProperties: false,
            properties: { query: { type: 'string' } },
          },
          port: {
            type: 'object',
            additionalProperties: false,
            required: ['entity'],
            properties: {
              itemsToParse: { type: 'string' },
              itemsToParseName: { type: 'string', pattern: '^[^\\s]+$' },
              entity: {
                type: 'object',
                additionalProperties: false,
                required: ['mappings'],
                properties: { mappings: { type: 'array', minItems: 1, items: mappingSchema } },
              },
            },
          },
        },
      },
    },
  },
};

const validate = new Ajv({ allErrors: true, schemas: [jqTree] }).compile(configSchema);

export class ConfigError extends Error {
  constructor(
    readonly source: string,
    readonly problems: string[],
  ) {
    super(`invalid exporter config (${source}):\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

function describe(e: ErrorObject): string {
  const where = e.instancePath ? e.instancePath.slice(1).replaceAll('/', '.') : '(root)';
  switch (e.keyword) {
    case 'required':
      return `${where}: missing required field "${(e.params as { missingProperty: string }).missingProperty}"`;
    case 'additionalProperties':
      return `${where}: unknown field "${(e.params as { additionalProperty: string }).additionalProperty}"`;
    default:
      return `${where}: ${e.message ?? e.keyword}`;
  }
}

/** Every jq leaf of a tree with its location. */
export function treeLeaves(tree: JqTree, at: string, out: Array<[string, string]> = []): Array<[string, string]> {
  if (typeof tree === 'string') out.push([at, tree]);
  else if (Array.isArray(tree)) tree.forEach((t, i) => void treeLeaves(t, `${at}.${i}`, out));
  else for (const [k, v] of Object.entries(tree)) treeLeaves(v, `${at}.${k}`, out);
  return out;
}

/** Every jq expression in the config with a readable location, for compile checks. */
export function expressions(cfg: Pick<ExporterConfig, 'resources' | 'crdsToDiscover'>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  if (cfg.crdsToDiscover) out.push(['crdsToDiscover', cfg.crdsToDiscover]);
  cfg.resources.forEach((r, i) => {
    const at = `resources.${i} (${r.kind})`;
    if (r.selector?.query) out.push([`${at}.selector.query`, r.selector.query]);
    if (r.port.itemsToParse) out.push([`${at}.port.itemsToParse`, r.port.itemsToParse]);
    r.port.entity.mappings.forEach((m, j) => {
      const mat = `${at}.port.entity.mappings.${j}`;
      treeLeaves(m.identifier, `${mat}.identifier`, out);
      for (const f of ['title', 'blueprint', 'icon'] as const) {
        const v = m[f];
        if (v) out.push([`${mat}.${f}`, v]);
      }
      if (m.team !== undefined) treeLeaves(m.team, `${mat}.team`, out);
      for (const [k, v] of Object.entries(m.properties ?? {})) out.push([`${mat}.properties.${k}`, v]);
      for (const [k, v] of Object.entries(m.relations ?? {})) treeLeaves(v, `${mat}.relations.${k}`, out);
    });
  });
  return out;
}

/** Port's exporter keys that have no effect here, and why; checked in this order. */
function portWarnings(r: Record<string, unknown>): string[] {
  const w: string[] = [];
  if (r.eventListenerType !== undefined)
    w.push(
      `eventListenerType (${JSON.stringify(r.eventListenerType)}) is ignored: this exporter reads its mapping from this file and watches the cluster; it does not listen for Port-side config changes or resync requests (restart to apply a changed file)`,
    );
  if (r.createDefaultResources === true)
    w.push(
      'createDefaultResources is ignored: Port default blueprints, pages and scorecards are not created; create the blueprints in Port, or list them under `blueprints` for this exporter to create',
    );
  if (r.createPortResourcesOrigin !== undefined)
    w.push('createPortResourcesOrigin is ignored: no Port-side integration resources are created');
  if (r.overwriteConfigurationOnRestart !== undefined)
    w.push('overwriteConfigurationOnRestart is ignored: no Port integration config is kept; this file is the config');
  if (r.sendRawDataExamples !== undefined)
    w.push('sendRawDataExamples is ignored: no raw data examples are sent to Port');
  if (r.updateEntityOnlyOnDiff === false)
    w.push(
      'updateEntityOnlyOnDiff: false is ignored: an entity is only re-sent when its mapped content changes (as with the default, true)',
    );
  if (r.crdsToDiscover && !r.actionsWebhookUrl)
    w.push(
      'crdsToDiscover: no self-service actions are created for discovered CRDs without actionsWebhookUrl (the promotions backend Port webhook, https://<backstage>/api/promotions/port/webhook)',
    );
  return w;
}

const DEFAULT_STATE_KEY = 'my-k8s-exporter';

function clusterNameFromEnv(): string {
  const n = (process.env.CLUSTER_NAME ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return n || 'current';
}

/** Validates a parsed config object, fills defaults, and compiles every jq expression. */
export async function parseConfig(raw: unknown, source = 'config'): Promise<ExporterConfig> {
  if (!validate(raw)) throw new ConfigError(source, (validate.errors ?? []).map(describe));
  type Raw = Partial<Omit<ExporterConfig, 'port' | 'overwriteCrdsActions'>> & {
    overwriteCrdsActions?: boolean;
    port?: Partial<ExporterConfig['port']>;
    resyncInterval?: number;
    allowAllEnvironmentVariablesInJQ?: boolean;
    allowedEnvironmentVariablesInJQ?: string[];
  } & Record<string, unknown>;
  const r = raw as Raw;
  const problems: string[] = [];
  const dialect: ConfigDialect = r.clusters ? 'kpromo' : 'port-k8s-exporter';
  const port = dialect === 'port-k8s-exporter';
  if (!port && !r.stateKey) problems.push('(root): missing required field "stateKey"');
  if (r.resyncInterval !== undefined && r.resyncIntervalSeconds !== undefined)
    problems.push('resyncInterval (minutes, as in Port) and resyncIntervalSeconds are both set: keep one');
  const includeDefaults = r.includeDefaults ?? !port;
  const allowed = r.allowedEnvironmentVariablesInJQ ?? DEFAULT_ALLOWED_ENV;
  for (const p of allowed) {
    try {
      new RegExp(p);
    } catch (e) {
      problems.push(
        `allowedEnvironmentVariablesInJQ: ${JSON.stringify(p)} is not a regular expression: ${(e as Error).message}`,
      );
    }
  }
  const cfg: ExporterConfig = {
    dialect,
    // Port lower-cases its state key (pkg/config/config.go, NewConfiguration).
    stateKey: port ? (r.stateKey ?? process.env.STATE_KEY ?? DEFAULT_STATE_KEY).toLowerCase() : (r.stateKey as string),
    clusters: r.clusters ?? [{ name: clusterNameFromEnv() }],
    port: {
      baseUrl: r.port?.baseUrl ?? process.env.PORT_BASE_URL ?? 'https://api.getport.io',
      clientId: r.port?.clientId ?? process.env.PORT_CLIENT_ID,
      clientSecret: r.port?.clientSecret ?? process.env.PORT_CLIENT_SECRET,
      concurrency: r.port?.concurrency ?? 4,
      createBlueprints: r.port?.createBlueprints ?? true,
      batchWindowMs: r.port?.batchWindowMs ?? 50,
      maxBatchDelayMs: r.port?.maxBatchDelayMs ?? 300,
    },
    resyncIntervalSeconds:
      r.resyncIntervalSeconds ?? (r.resyncInterval !== undefined ? r.resyncInterval * 60 : port ? 0 : 300),
    includeDefaults,
    blueprints: [...(includeDefaults ? DEFAULT_BLUEPRINTS : []), ...(r.blueprints ?? [])],
    resources: [...(includeDefaults ? DEFAULT_RESOURCES : []), ...(r.resources ?? [])],
    crdsToDiscover: r.crdsToDiscover || undefined,
    actionsWebhookUrl: r.actionsWebhookUrl || undefined,
    overwriteCrdsActions: r.overwriteCrdsActions === true,
    deleteDependents: r.deleteDependents ?? false,
    // Port's exporter defaults to false; kpromo's own configs have always created missing targets.
    createMissingRelatedEntities: r.createMissingRelatedEntities ?? !port,
    jqEnv: { allowAll: r.allowAllEnvironmentVariablesInJQ ?? false, allowed },
    warnings: portWarnings(r),
  };
  const names = new Set<string>();
  for (const c of cfg.clusters) {
    if (names.has(c.name)) problems.push(`clusters: duplicate cluster name "${c.name}"`);
    names.add(c.name);
  }
  cfg.resources.forEach((res, i) => {
    try {
      parseKind(res.kind);
    } catch (e) {
      problems.push(`resources.${i}.kind: ${(e as Error).message}`);
    }
  });
  const exprs = expressions(cfg).filter(([, e]) => e.trim() !== '');
  const errors = await checkExpressions(
    exprs.map(([, e]) => e),
    ['cluster'],
  );
  for (const [where, expr] of exprs) {
    const msg = errors.get(expr);
    if (msg) problems.push(`${where}: jq expression ${JSON.stringify(expr)} does not compile: ${msg}`);
  }
  if (problems.length) throw new ConfigError(source, problems);
  return cfg;
}

export async function loadConfig(path: string): Promise<ExporterConfig> {
  let raw: unknown;
  try {
    raw = parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new ConfigError(path, [`cannot read YAML: ${(e as Error).message}`]);
  }
  return parseConfig(raw ?? {}, path);
}
