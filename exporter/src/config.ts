import { readFileSync } from 'node:fs';
import Ajv, { type ErrorObject } from 'ajv';
import { parse } from 'yaml';
import { DEFAULT_BLUEPRINTS, DEFAULT_RESOURCES } from './defaults.js';
import { checkExpression, JqError } from './jq.js';
import { parseKind } from './resourceKind.js';

export interface EntityMapping {
  identifier: string;
  title?: string;
  blueprint: string;
  team?: string;
  icon?: string;
  properties?: Record<string, string>;
  relations?: Record<string, string>;
}

export interface ResourceConfig {
  kind: string;
  selector?: { query?: string };
  port: { itemsToParse?: string; entity: { mappings: EntityMapping[] } };
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

export interface ExporterConfig {
  stateKey: string;
  clusters: ClusterConfig[];
  port: {
    baseUrl: string;
    clientId?: string;
    clientSecret?: string;
    concurrency: number;
    createBlueprints: boolean;
  };
  resyncIntervalSeconds: number;
  includeDefaults: boolean;
  blueprints: BlueprintConfig[];
  resources: ResourceConfig[];
  crdsToDiscover?: string;
}

const NAME = '^[A-Za-z0-9@_=-]+$';
const mappingSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['identifier', 'blueprint'],
  properties: {
    identifier: { type: 'string', minLength: 1 },
    title: { type: 'string', minLength: 1 },
    blueprint: { type: 'string', minLength: 1 },
    team: { type: 'string', minLength: 1 },
    icon: { type: 'string', minLength: 1 },
    properties: {
      type: 'object',
      propertyNames: { pattern: NAME },
      additionalProperties: { type: 'string', minLength: 1 },
    },
    relations: {
      type: 'object',
      propertyNames: { pattern: NAME },
      additionalProperties: { type: 'string', minLength: 1 },
    },
  },
};

const configSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['stateKey', 'clusters'],
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
      },
    },
    resyncIntervalSeconds: { type: 'integer', minimum: 0 },
    includeDefaults: { type: 'boolean' },
    crdsToDiscover: { type: 'string', minLength: 1 },
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
            properties: { query: { type: 'string', minLength: 1 } },
          },
          port: {
            type: 'object',
            additionalProperties: false,
            required: ['entity'],
            properties: {
              itemsToParse: { type: 'string', minLength: 1 },
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

const validate = new Ajv({ allErrors: true }).compile(configSchema);

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
      for (const f of ['identifier', 'title', 'blueprint', 'team', 'icon'] as const) {
        const v = m[f];
        if (v) out.push([`${mat}.${f}`, v]);
      }
      for (const [k, v] of Object.entries(m.properties ?? {})) out.push([`${mat}.properties.${k}`, v]);
      for (const [k, v] of Object.entries(m.relations ?? {})) out.push([`${mat}.relations.${k}`, v]);
    });
  });
  return out;
}

/** Validates a parsed config object, fills defaults, and compiles every jq expression. */
export async function parseConfig(raw: unknown, source = 'config'): Promise<ExporterConfig> {
  if (!validate(raw)) throw new ConfigError(source, (validate.errors ?? []).map(describe));
  const r = raw as Partial<ExporterConfig> & Pick<ExporterConfig, 'stateKey' | 'clusters'>;
  const problems: string[] = [];
  const includeDefaults = r.includeDefaults ?? true;
  const cfg: ExporterConfig = {
    stateKey: r.stateKey,
    clusters: r.clusters,
    port: {
      baseUrl: r.port?.baseUrl ?? 'https://api.getport.io',
      clientId: r.port?.clientId ?? process.env.PORT_CLIENT_ID,
      clientSecret: r.port?.clientSecret ?? process.env.PORT_CLIENT_SECRET,
      concurrency: r.port?.concurrency ?? 4,
      createBlueprints: r.port?.createBlueprints ?? true,
    },
    resyncIntervalSeconds: r.resyncIntervalSeconds ?? 300,
    includeDefaults,
    blueprints: [...(includeDefaults ? DEFAULT_BLUEPRINTS : []), ...(r.blueprints ?? [])],
    resources: [...(includeDefaults ? DEFAULT_RESOURCES : []), ...(r.resources ?? [])],
    crdsToDiscover: r.crdsToDiscover,
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
  for (const [where, expr] of expressions(cfg)) {
    try {
      await checkExpression(expr);
    } catch (e) {
      problems.push(
        `${where}: jq expression ${JSON.stringify(expr)} does not compile: ${e instanceof JqError ? e.message : String(e)}`,
      );
    }
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
  return parseConfig(raw, path);
}
