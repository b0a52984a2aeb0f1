import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type EntityMapping, parseConfig, type ResourceConfig } from '../src/config.js';
import { crdToPortResource } from '../src/discoverCrds.js';
import { jqEnvironment } from '../src/jq.js';
import { compileResource, type MapResult, mapObjects, STATE_KEY_PROPERTY } from '../src/mapEntity.js';

// Port's Kubernetes exporter semantics, each written from the Go exporter's code
// (port-labs/port-k8s-exporter; file named per test) rather than from this implementation.

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures/port-k8s-exporter');
const PORT = { stateKey: 'k', dialect: 'port-k8s-exporter' as const };
const ENV = { CLUSTER_NAME: 'prod-eu' };

const obj = (extra: Record<string, unknown> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop', labels: { zone: 'b', app: 'web' } },
  spec: {
    replicas: 2,
    owners: ['team-a', 'team-b'],
    containers: [
      { name: 'c1', image: 'nginx:1' },
      { name: 'c2', image: 'redis:latest' },
    ],
  },
  ...extra,
});

function resource(m: Partial<EntityMapping>, extra: Partial<ResourceConfig> = {}, port: object = {}): ResourceConfig {
  return {
    kind: 'apps/v1/deployments',
    ...extra,
    port: { ...port, entity: { mappings: [{ identifier: '.metadata.name', blueprint: '"workload"', ...m }] } },
  };
}

async function map(
  res: ResourceConfig,
  objects: unknown[] = [obj()],
  env: Record<string, string> = ENV,
): Promise<MapResult[]> {
  return mapObjects(compileResource(res, env)('dev'), objects, PORT);
}

async function one(m: Partial<EntityMapping>, o: unknown = obj(), extra: Partial<ResourceConfig> = {}) {
  const [r] = await map(resource(m, extra), [o]);
  return r;
}

const entity = (r: MapResult, i = 0) => {
  if (!r.ok) throw new Error(`mapping failed: ${r.error}`);
  return r.entities[i];
};

describe('jq environment (pkg/jq/parser.go runJQQuery; pkg/config/config.go; pkg/handlers/controllers.go)', () => {
  it('exposes only ^PORT_ and CLUSTER_NAME by default, through both env.X and $ENV.X', async () => {
    const env = jqEnvironment({ CLUSTER_NAME: 'c1', PORT_REGION: 'eu', HOME: '/root', MY_CLUSTER_NAME_X: 'y' });
    // The allow-list entries are regular expressions tested anywhere in the name.
    expect(env).toEqual({ CLUSTER_NAME: 'c1', PORT_REGION: 'eu', MY_CLUSTER_NAME_X: 'y' });
    const r = await map(
      resource({
        identifier: 'env.CLUSTER_NAME',
        properties: { a: '$ENV.CLUSTER_NAME', b: '$ENV.PORT_REGION', home: 'env.HOME' },
      }),
      [obj()],
      env,
    );
    expect(entity(r[0]).entity).toMatchObject({ identifier: 'c1', properties: { a: 'c1', b: 'eu', home: null } });
  });

  it('allowAllEnvironmentVariablesInJQ exposes everything; allowedEnvironmentVariablesInJQ replaces the list', () => {
    const vars = { CLUSTER_NAME: 'c', HOME: '/root', TEAM: 't' };
    expect(jqEnvironment(vars, { allowAll: true })).toEqual(vars);
    expect(jqEnvironment(vars, { allowed: ['^TEAM$'] })).toEqual({ TEAM: 't' });
    // An empty list is no pattern at all: nothing is exposed.
    expect(jqEnvironment(vars, { allowed: [] })).toEqual({});
  });

  it('splits each NAME=value on every "=", keeping the first piece, and escapes quotes as Port does', () => {
    expect(jqEnvironment({ PORT_A: 'x=y', PORT_B: 'say "hi"', PORT_C: '' })).toEqual({
      PORT_A: 'x',
      PORT_B: 'say \\"hi\\"',
      PORT_C: '',
    });
  });

  it('config keys feed the allow-list; a bad pattern is a config error', async () => {
    const cfg = await parseConfig({
      allowAllEnvironmentVariablesInJQ: false,
      allowedEnvironmentVariablesInJQ: ['^TEAM'],
      resources: [],
    });
    expect(cfg.jqEnv).toEqual({ allowAll: false, allowed: ['^TEAM'] });
    const err = await parseConfig({ allowedEnvironmentVariablesInJQ: ['('], resources: [] }).catch((e) => e);
    expect(err.message).toContain('allowedEnvironmentVariablesInJQ');
  });
});

describe('jq results (pkg/jq/parser.go: runJQQuery, ParseString, ParseBool, ParseArray)', () => {
  it('takes the first output; later outputs are never evaluated, so their errors do not count', async () => {
    const r = await one({
      properties: { image: '.spec.containers[].image', lazy: '(1, error("never reached"))' },
    });
    expect(entity(r).entity.properties).toEqual({ image: 'nginx:1', lazy: 1 });
  });

  it('an expression with no output fails the object, whatever the field', async () => {
    for (const m of [{ identifier: 'empty' }, { properties: { p: '.spec | select(false)' } }, { title: 'empty' }]) {
      const r = await one(m);
      expect(r.ok, JSON.stringify(m)).toBe(false);
      expect(!r.ok && r.error).toMatch(/no output/);
    }
  });

  it('a null or non-string identifier or title fails the object; an empty title is left out', async () => {
    for (const m of [
      { identifier: '.nope' },
      { identifier: '.spec.replicas' },
      { title: '.nope' },
      { blueprint: 'null' },
    ]) {
      const r = await one(m);
      expect(r.ok, JSON.stringify(m)).toBe(false);
      expect(!r.ok && r.error).toMatch(/string expected, got (null|number)/);
    }
    expect(entity(await one({ title: '""' })).entity).not.toHaveProperty('title');
  });

  it('trims every leading and trailing double quote of string results (trimJQStringLiteral)', async () => {
    const r = await one({ identifier: '"\\"\\"web\\"\\""', title: '"\\"Web\\""', team: '["\\"t\\""]' });
    expect(entity(r).entity).toMatchObject({ identifier: 'web', title: 'Web', team: ['t'] });
  });

  it('a runtime error fails the object and is reported with the field', async () => {
    const r = await one({ properties: { bad: '.metadata.name + 1' } });
    expect(r).toEqual({ ok: false, error: expect.stringMatching(/^mappings\.0\.properties\.bad: .*cannot be added/) });
  });

  it('team: a string or a list of strings; null or other types fail the object (ParseStringOrStringArray)', async () => {
    expect(entity(await one({ team: '.spec.owners' })).entity.team).toEqual(['team-a', 'team-b']);
    expect(entity(await one({ team: '.spec.owners[0]' })).entity.team).toBe('team-a');
    expect((await one({ team: '.nope' })).ok).toBe(false);
    expect((await one({ team: '[1]' })).ok).toBe(false);
  });

  it('keys come out in gojq order (sorted), also for objects built inside the expression', async () => {
    const r = await one({
      properties: {
        keys: '.metadata.labels | keys_unsorted',
        entries: '.metadata.labels | to_entries | map(.key) | join(",")',
        json: '{b: 1, a: 2} | tojson',
        str: '.metadata.labels | tostring',
        first: '[.metadata.labels[]] | .[0]',
      },
    });
    expect(entity(r).entity.properties).toEqual({
      keys: ['app', 'zone'],
      entries: 'app,zone',
      json: '{"a":2,"b":1}',
      str: '{"app":"web","zone":"b"}',
      first: 'web',
    });
  });
});

describe('selector and itemsToParse (pkg/k8s/controller.go: getObjectEntities, isPassSelector)', () => {
  it('a selector must yield a boolean: false skips, a non-boolean or no output fails the object', async () => {
    expect(await one({}, obj(), { selector: { query: '.metadata.name == "other"' } })).toEqual({
      ok: true,
      entities: [],
    });
    const nonBool = await one({}, obj(), { selector: { query: '.metadata.name' } });
    expect(!nonBool.ok && nonBool.error).toMatch(/selector\.query: boolean expected, got string/);
    expect((await one({}, obj(), { selector: { query: 'empty' } })).ok).toBe(false);
    // An empty query selects everything.
    expect(entity(await one({}, obj(), { selector: { query: '' } })).entity.identifier).toBe('web');
  });

  it('itemsToParse: one entity per item, under itemsToParseName, with the selector evaluated per item', async () => {
    const res = resource(
      { identifier: '.metadata.name + "-" + .container.name', properties: { image: '.container.image' } },
      { selector: { query: '.container.image | endswith(":latest") | not' } },
      { itemsToParse: '.spec.containers', itemsToParseName: 'container' },
    );
    const [r] = await map(res);
    expect(r.ok && r.entities.map((e) => [e.entity.identifier, e.entity.properties.image])).toEqual([
      ['web-c1', 'nginx:1'],
    ]);
    // Default name: item.
    const [d] = await map(
      resource({ identifier: '.metadata.name + "-" + .item.name' }, {}, { itemsToParse: '.spec.containers' }),
    );
    expect(d.ok && d.entities.map((e) => e.entity.identifier)).toEqual(['web-c1', 'web-c2']);
  });

  it('itemsToParse must yield an array (ParseArray); anything else fails the object', async () => {
    const [r] = await map(resource({}, {}, { itemsToParse: '.spec.replicas' }));
    expect(!r.ok && r.error).toMatch(/itemsToParse: array expected, got number/);
    // A failing item fails the whole object, not only that item.
    const [bad] = await map(
      resource(
        { identifier: '.item.image | if endswith("latest") then null else . end' },
        {},
        { itemsToParse: '.spec.containers' },
      ),
    );
    expect(bad.ok).toBe(false);
  });
});

describe('search queries, lists and "*" (pkg/jq/parser.go: ParseMapRecursively, ParseMapInterface)', () => {
  const query = {
    combinator: '"and"',
    rules: [{ property: '"$identifier"', operator: '"="', value: '.metadata.name' }],
  };

  it('identifier, team and relations as search queries: leaves evaluated, shape kept, sent to Port as is', async () => {
    const r = await one({
      identifier: query,
      team: { combinator: '"and"', rules: [{ property: '"$title"', operator: '"="', value: '.spec.owners[0]' }] },
      relations: { ns: query, images: ['.spec.containers[0].image', '.spec.containers[1].image'] },
    });
    const m = entity(r);
    const q = { combinator: 'and', rules: [{ property: '$identifier', operator: '=', value: 'web' }] };
    expect(m.request).toEqual({
      identifier: q,
      team: { combinator: 'and', rules: [{ property: '$title', operator: '=', value: 'team-a' }] },
      properties: {},
      relations: { ns: q, images: ['nginx:1', 'redis:latest'] },
    });
    // The string-typed view other sinks get leaves the queries out.
    expect(m.entity.relations).toEqual({ images: ['nginx:1', 'redis:latest'] });
    expect(m.entity).not.toHaveProperty('team');
  });

  it('"*" merges an object result into the properties (explicit keys win); a non-object stays under "*"', async () => {
    const r = await one({ properties: { '*': '.spec | {replicas, extra: "x"}', replicas: '"explicit"' } });
    expect(entity(r).entity.properties).toEqual({ replicas: 'explicit', extra: 'x' });
    expect(entity(await one({ properties: { '*': '.spec.replicas' } })).entity.properties).toEqual({ '*': 2 });
  });

  it('null properties are sent (Port upserts with merge=true, so null clears a value)', async () => {
    const r = await one({ properties: { gone: '.status.nope' }, relations: { ns: 'null' } });
    expect(entity(r).entity).toMatchObject({ properties: { gone: null }, relations: { ns: null } });
    expect(entity(r).entity.properties).not.toHaveProperty(STATE_KEY_PROPERTY);
  });
});

describe("Port's exporter config file (pkg/port/models.go Config; pkg/config/config.go)", () => {
  it("accepts Port's published default config unchanged, as a single-cluster port-k8s-exporter config", async () => {
    process.env.CLUSTER_NAME = 'Prod_EU';
    try {
      const cfg = await parseConfig(parse(readFileSync(join(FIXTURES, 'appConfig.yaml'), 'utf8')));
      expect(cfg).toMatchObject({
        dialect: 'port-k8s-exporter',
        stateKey: 'my-k8s-exporter',
        clusters: [{ name: 'prod-eu' }],
        includeDefaults: false,
        createMissingRelatedEntities: true,
        deleteDependents: false,
        resyncIntervalSeconds: 0,
        jqEnv: { allowAll: false, allowed: ['^PORT_', 'CLUSTER_NAME'] },
        warnings: [],
      });
      expect(cfg.resources.map((r) => r.kind)).toEqual([
        'v1/namespaces',
        'v1/namespaces',
        'apps/v1/deployments',
        'apps/v1/daemonsets',
        'apps/v1/statefulsets',
      ]);
    } finally {
      delete process.env.CLUSTER_NAME;
    }
  });

  it('takes every top-level key; keys without effect here get a warning, never a silent change', async () => {
    const cfg = await parseConfig({
      stateKey: 'My-Exporter',
      resyncInterval: 5,
      eventListenerType: 'KAFKA',
      createDefaultResources: true,
      overwriteConfigurationOnRestart: true,
      updateEntityOnlyOnDiff: false,
      sendRawDataExamples: true,
      crdsToDiscover: '.metadata.name | endswith(".example.com")',
      overwriteCrdsActions: true,
      deleteDependents: true,
      createMissingRelatedEntities: false,
      resources: [],
    });
    // Port lower-cases the state key; resyncInterval is in minutes.
    expect(cfg).toMatchObject({ stateKey: 'my-exporter', resyncIntervalSeconds: 300, deleteDependents: true });
    expect(cfg.createMissingRelatedEntities).toBe(false);
    const w = cfg.warnings.join('\n');
    for (const k of [
      'eventListenerType',
      'createDefaultResources',
      'overwriteConfigurationOnRestart',
      'updateEntityOnlyOnDiff',
      'sendRawDataExamples',
      // crdsToDiscover without a webhook URL: no actions (overwriteCrdsActions itself now applies).
      'actionsWebhookUrl',
    ])
      expect(w).toContain(k);
    expect(cfg.overwriteCrdsActions).toBe(true);
    // Port's defaults when omitted: no missing related entities created, no dependents deleted.
    const bare = await parseConfig({ resources: [] });
    expect(bare).toMatchObject({ createMissingRelatedEntities: false, deleteDependents: false, warnings: [] });
    const both = await parseConfig({ resyncInterval: 1, resyncIntervalSeconds: 60, resources: [] }).catch((e) => e);
    expect(both.message).toContain('both set');
  });

  it('a kpromo config keeps its meaning: state-key property, kpromo defaults, nulls dropped', async () => {
    const cfg = await parseConfig({ stateKey: 's', clusters: [{ name: 'dev' }] });
    expect(cfg).toMatchObject({ dialect: 'kpromo', includeDefaults: true, createMissingRelatedEntities: true });
    const [r] = await mapObjects(compileResource(resource({ properties: { gone: 'null' } }))('dev'), [obj()], {
      stateKey: 's',
    });
    expect(entity(r).entity.properties).toEqual({ [STATE_KEY_PROPERTY]: 's' });
  });

  it('crdsToDiscover in a Port config: blueprint per CRD singular, identifier .metadata.name, "*": .spec (pkg/crd/crd.go)', () => {
    const { blueprint, resource: res } = crdToPortResource({
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        scope: 'Namespaced',
        names: { kind: 'Widget', plural: 'widgets', singular: 'widget' },
        versions: [
          {
            name: 'v1',
            schema: {
              openAPIV3Schema: {
                properties: {
                  spec: {
                    properties: {
                      size: { type: 'integer' },
                      color: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
                    },
                  },
                },
              },
            },
          },
        ],
      },
    });
    expect(blueprint).toMatchObject({
      identifier: 'widget',
      title: 'Widget',
      schema: {
        properties: {
          size: { type: 'number' },
          color: { type: 'string' },
          namespace: { type: 'string' },
        },
      },
    });
    expect(res.port.entity.mappings[0]).toEqual({
      identifier: '.metadata.name',
      title: '.metadata.name',
      blueprint: '"widget"',
      properties: { namespace: '.metadata.namespace', '*': '.spec' },
    });
  });
});
