import { PortStandIn } from '@kpromo/test-harness/port';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type BlueprintConfig, parseConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { compileResource, finishEntity, mapObjects, STATE_KEY_PROPERTY } from '../src/mapEntity.js';
import { createPortClient } from '../src/portClient.js';
import { PortSink } from '../src/portSink.js';

// The sink against the spec-validating stand-in (an in-process HTTP server; no cluster needed).
const log = createLogger('silent');
const BP: BlueprintConfig = {
  identifier: 'thing',
  title: 'Thing',
  schema: { properties: { size: { type: 'number' }, blob: { type: 'string' } } },
};
const thing = (id: string, props: Record<string, unknown> = {}) =>
  finishEntity({ identifier: id, blueprint: 'thing', properties: { size: 1, ...props }, relations: {} }, 'k');

let port: PortStandIn;
let sink: PortSink;
let client: ReturnType<typeof createPortClient>;

beforeEach(async () => {
  port = new PortStandIn();
  await port.start();
  client = createPortClient({
    baseUrl: port.url,
    clientId: port.clientId,
    clientSecret: port.clientSecret,
    log,
    maxBackoffMs: 200,
  });
  sink = new PortSink({
    api: client.api,
    log,
    stateKey: 'k',
    blueprints: [BP],
    createBlueprints: true,
    concurrency: 2,
  });
  sink.start();
});

afterEach(async () => {
  vi.useRealTimers();
  sink.stop();
  await port.stop();
  expect(port.violations).toEqual([]);
});

describe('PortSink', () => {
  it('upserts in bulk calls of at most 20 entities and 1 MiB, and skips unchanged entities', async () => {
    for (let i = 0; i < 45; i++) sink.put(thing(`t${i}`));
    for (let i = 0; i < 3; i++) sink.put(thing(`big${i}`, { blob: 'x'.repeat(450_000) }));
    await sink.idle();
    expect(port.entitiesOf('thing').size).toBe(48);
    const bulk = port.calls.filter((c) => c.path.endsWith('/entities/bulk'));
    // 48 entities: 45 small + 3 of ~450 KB; size forces the big ones into separate bodies.
    expect(bulk.length).toBeGreaterThanOrEqual(4);
    expect(bulk.length).toBeLessThanOrEqual(5);
    const before = port.callCount();
    for (let i = 0; i < 45; i++) sink.put(thing(`t${i}`));
    await sink.idle();
    expect(port.callCount()).toBe(before);
    expect(port.entitiesOf('thing').get('t1')?.properties[STATE_KEY_PROPERTY]).toBe('k');
  });

  it('adds configured properties an existing blueprint lacks (made by an older version), keeping the others', async () => {
    port.blueprints.set('thing', {
      identifier: 'thing',
      title: 'Thing (older)',
      schema: { properties: { size: { type: 'number', title: 'Size as configured in Port' } }, required: [] },
      relations: {},
    } as never);
    sink.put(thing('t1', { blob: 'new property' }));
    await sink.idle();
    const props = (port.blueprints.get('thing') as { schema: { properties: Record<string, unknown> } }).schema
      .properties;
    expect(props.size).toEqual({ type: 'number', title: 'Size as configured in Port' });
    expect(props.blob).toEqual({ type: 'string' });
    expect(props).toHaveProperty(STATE_KEY_PROPERTY);
    expect(port.entitiesOf('thing').get('t1')?.properties.blob).toBe('new property');
  });

  it('falls back to single upserts after a 207 and records the entity Port rejects', async () => {
    sink.put(thing('good-1'));
    sink.put(finishEntity({ identifier: 'bad', blueprint: 'thing', properties: { nope: 1 }, relations: {} }, 'k'));
    sink.put(thing('good-2'));
    await sink.idle();
    expect(port.calls.some((c) => c.status === 207)).toBe(true);
    expect([...port.entitiesOf('thing').keys()].sort()).toEqual(['good-1', 'good-2']);
    expect([...sink.failures.keys()].map((k) => k.split('\u0000')[1])).toEqual(['bad']);
    // A resync after a failed sync must not delete anything.
    port
      .entitiesOf('thing')
      .set('stale', { identifier: 'stale', properties: { [STATE_KEY_PROPERTY]: 'k' }, relations: {} });
    expect((await sink.resync(['thing'], 0)).skipped).toMatch(/failed to sync/);
    expect(port.entitiesOf('thing').has('stale')).toBe(true);
  });

  it('refreshes the token before expiresIn instead of waiting for a 401', async () => {
    // Token lifetimes are read from Date, by the client and by the stand-in: on a fake Date moved by
    // hand a busy machine cannot age the first token past its refresh point (or its expiry) while
    // the first put is still being written.
    vi.useFakeTimers({ toFake: ['Date'] });
    port.tokenTtlSeconds = 1;
    sink.put(thing('a'));
    await sink.idle();
    vi.advanceTimersByTime(1_100);
    sink.put(thing('a', { size: 2 }));
    await sink.idle();
    expect(client.stats.tokenFetches).toBe(2);
    expect(port.calls.filter((c) => c.status === 401)).toEqual([]);
    expect(port.entitiesOf('thing').get('a')?.properties.size).toBe(2);
  });

  it('coalesces updates while Port is down: pending work stays bounded by the entity count', async () => {
    sink.put(thing('x'));
    await sink.idle();
    port.faults = [{ status: 503, times: 1_000 }];
    for (let v = 0; v < 500; v++) for (let i = 0; i < 10; i++) sink.put(thing(`e${i}`, { size: v }));
    expect(sink.pending).toBeLessThanOrEqual(10);
    port.faults = [];
    await sink.idle();
    expect(port.entitiesOf('thing').get('e9')?.properties.size).toBe(499);
  });

  it('deletes removed entities, in bulk and one by one, treating 404 as done', async () => {
    for (let i = 0; i < 5; i++) sink.put(thing(`d${i}`));
    await sink.idle();
    port.entitiesOf('thing').delete('d4'); // someone deleted it in Port already
    for (let i = 0; i < 5; i++) sink.remove('thing', `d${i}`);
    await sink.idle();
    expect(port.entitiesOf('thing').size).toBe(0);
    expect(port.calls.some((c) => c.path.endsWith('/bulk/entities/delete') && c.status === 404)).toBe(true);
    expect(sink.stats.deleted).toBe(5);
  });

  it('creates relation target blueprints before the blueprints that point at them', async () => {
    const s2 = new PortSink({
      api: client.api,
      log,
      stateKey: 'k',
      blueprints: [
        BP,
        {
          identifier: 'part',
          title: 'Part',
          schema: { properties: {} },
          relations: { thing: { target: 'thing', required: false, many: false } },
        },
      ],
      createBlueprints: true,
      concurrency: 1,
    });
    s2.start();
    // Only a `part` is written; `thing` must still be created first, or Port refuses the relation.
    s2.put(finishEntity({ identifier: 'p1', blueprint: 'part', properties: {}, relations: { thing: 't1' } }, 'k'));
    await s2.idle();
    s2.stop();
    expect([...port.blueprints.keys()]).toEqual(['thing', 'part']);
    expect(port.entitiesOf('part').get('p1')?.relations).toEqual({ thing: 't1' });
  });

  it('pages through owned entities when resyncing', async () => {
    const m = port.entitiesOf('thing');
    await sink.ensureBlueprint('thing');
    for (let i = 0; i < 2_100; i++)
      m.set(`s${i}`, { identifier: `s${i}`, properties: { [STATE_KEY_PROPERTY]: 'k' }, relations: {} });
    m.set('other', { identifier: 'other', properties: { [STATE_KEY_PROPERTY]: 'other' }, relations: {} });
    sink.put(thing('s7'));
    const r = await sink.resync(['thing'], 0);
    expect(r.deleted).toBe(2_099);
    expect([...m.keys()].sort()).toEqual(['other', 's7']);
    expect(port.calls.filter((c) => c.path.endsWith('/entities/search')).length).toBe(3);
  });
});

describe('the default blueprints and mappings against the stand-in', () => {
  it("takes a fleet plan's waves and a fleet Environment's clusters as Port stores them", async () => {
    const cfg = await parseConfig({ stateKey: 'k', clusters: [{ name: 'dev', context: 'dev' }] });
    const mapped = async (plural: string, o: unknown) => {
      const res = cfg.resources.find((r) => r.kind.endsWith(`/${plural}`))!;
      const [r] = await mapObjects(compileResource(res)('dev'), [o], 'k');
      if (!r.ok) throw new Error(r.error);
      return r.entities[0];
    };
    const env = await mapped('environments', {
      metadata: { name: 'prod', namespace: 'shop' },
      spec: {
        namespace: 'shop',
        registry: { host: 'r' },
        delivery: { method: 'patch' },
        clusters: [
          { name: 'prod-eu-1', cluster: { context: 'eu' } },
          { name: 'prod-us-1', cluster: { context: 'us' } },
        ],
      },
    });
    const spec = { flow: 'main', from: 'stable', to: 'prod', candidates: [{ application: 'cart' }] };
    const plan = await mapped('promotionplans', {
      metadata: { name: 'release-42', namespace: 'shop' },
      spec,
      status: {
        phase: 'Promoting',
        waves: [
          { name: 'canary', clusters: ['prod-eu-1'], phase: 'Succeeded', succeeded: 1, failed: 0 },
          { name: 'rest', clusters: ['prod-us-1'], phase: 'Promoting' },
        ],
      },
    });
    const single = await mapped('promotionplans', { metadata: { name: 'release-7', namespace: 'shop' }, spec });
    const s = new PortSink({
      api: client.api,
      log,
      stateKey: 'k',
      blueprints: cfg.blueprints,
      createBlueprints: true,
      concurrency: 1,
    });
    s.start();
    for (const m of [env, plan, single]) s.put(m);
    await s.idle();
    s.stop();
    expect(s.failures.size).toBe(0);
    expect(port.entitiesOf('kpromoEnvironment').get('dev:shop:prod')?.properties).toMatchObject({
      clusters: ['prod-eu-1', 'prod-us-1'],
      clusterCount: 2,
    });
    const plans = port.entitiesOf('kpromoPromotionPlan');
    expect(plans.get('dev:shop:release-42')?.properties).toMatchObject({
      waves: [
        { name: 'canary', phase: 'Succeeded', clusters: ['prod-eu-1'], succeeded: 1, failed: 0 },
        { name: 'rest', phase: 'Promoting', clusters: ['prod-us-1'], succeeded: 0, failed: 0 },
      ],
      currentWave: 'rest',
    });
    expect(plans.get('dev:shop:release-7')?.properties).toMatchObject({ waves: [] });
    expect(plans.get('dev:shop:release-7')?.properties).not.toHaveProperty('currentWave');
  });
});

describe("PortSink with Port's exporter options (pkg/port/cli/entity.go, pkg/port/entity/entity.go)", () => {
  const NS: BlueprintConfig = {
    identifier: 'namespace',
    title: 'Namespace',
    schema: { properties: { labels: { type: 'object' } } },
  };
  const WL: BlueprintConfig = {
    identifier: 'workload',
    title: 'Workload',
    schema: { properties: { replicas: { type: 'number' }, kind: { type: 'string' } } },
    relations: { Namespace: { target: 'namespace', required: true, many: false } },
  };
  const PORT = { stateKey: 'k', dialect: 'port-k8s-exporter' as const };
  const wl = (id: string, props: Record<string, unknown>, ns: unknown = 'shop') =>
    finishEntity({ identifier: id, blueprint: 'workload', properties: props, relations: { Namespace: ns } }, PORT);
  const portSink = (o: Partial<ConstructorParameters<typeof PortSink>[0]>, stateKey = 'k') => {
    const { api } = createPortClient({
      baseUrl: port.url,
      clientId: port.clientId,
      clientSecret: port.clientSecret,
      log,
      maxBackoffMs: 200,
      userAgent: `kpromo-exporter/0.1 (statekey/${stateKey})`,
    });
    const s = new PortSink({
      api,
      log,
      stateKey,
      blueprints: [NS, WL],
      createBlueprints: true,
      concurrency: 2,
      merge: true,
      ownership: 'datasource',
      ...o,
    });
    s.start();
    return s;
  };

  it('upserts with upsert, merge and create_missing_related_entities as configured; nulls clear values', async () => {
    const s = portSink({ createMissingRelatedEntities: true });
    s.put(wl('web', { replicas: 2, kind: 'Deployment' }));
    await s.idle();
    const bulk = port.calls.find((c) => c.path.endsWith('/workload/entities/bulk'));
    expect(bulk?.query).toEqual({ upsert: 'true', merge: 'true', create_missing_related_entities: 'true' });
    // The missing relation target was created by Port.
    expect(port.entitiesOf('namespace').has('shop')).toBe(true);
    // merge=true: a property sent as null is cleared, one not sent is kept (set by someone else).
    port.entitiesOf('workload').get('web')!.properties.kind = 'Deployment';
    s.put(wl('web', { replicas: null }));
    await s.idle();
    expect(port.entitiesOf('workload').get('web')?.properties).toEqual({ replicas: null, kind: 'Deployment' });
    // Blueprints are not given a state-key property under datasource ownership.
    const schema = (port.blueprints.get('workload') as { schema: { properties: object } }).schema.properties;
    expect(schema).not.toHaveProperty(STATE_KEY_PROPERTY);
    s.stop();
  });

  it('without createMissingRelatedEntities a missing target is reported for that entity only', async () => {
    const s = portSink({ createMissingRelatedEntities: false });
    s.put(finishEntity({ identifier: 'shop', blueprint: 'namespace', properties: {}, relations: {} }, PORT));
    await s.idle();
    s.put(wl('ok', { replicas: 1 }));
    s.put(wl('orphan', { replicas: 1 }, 'nowhere'));
    await s.idle();
    expect([...port.entitiesOf('workload').keys()]).toEqual(['ok']);
    expect([...s.failures.keys()].map((k) => k.split('\u0000')[1])).toEqual(['orphan']);
    expect(
      port.calls.find((c) => c.path.endsWith('/workload/entities/bulk'))?.query?.create_missing_related_entities,
    ).toBe('false');
    s.stop();
  });

  it('deleteDependents: deletes go with delete_dependents=true and take dependents along', async () => {
    const s = portSink({ deleteDependents: true, createMissingRelatedEntities: true });
    s.put(wl('a', { replicas: 1 }));
    s.put(wl('b', { replicas: 1 }));
    await s.idle();
    s.remove('namespace', 'shop');
    await s.idle();
    expect(port.calls.filter((c) => c.method === 'DELETE' || c.path.endsWith('/delete')).map((c) => c.query)).toEqual([
      { delete_dependents: 'true' },
    ]);
    expect(port.entitiesOf('workload').size).toBe(0);
    s.stop();
  });

  it('without deleteDependents a dependent through a required relation keeps the entity (reported)', async () => {
    const s = portSink({ createMissingRelatedEntities: true });
    s.put(wl('a', { replicas: 1 }));
    await s.idle();
    s.remove('namespace', 'shop');
    await s.idle();
    expect(port.entitiesOf('namespace').has('shop')).toBe(true);
    expect(port.calls.some((c) => c.method === 'DELETE' && c.status === 422)).toBe(true);
    s.stop();
  });

  it("resync deletes stale entities by datasource: its own and Port's exporter's under the same state key only", async () => {
    const s = portSink({ createMissingRelatedEntities: true });
    s.put(finishEntity({ identifier: 'shop', blueprint: 'namespace', properties: {}, relations: {} }, PORT));
    s.put(wl('live', { replicas: 1 }));
    await s.idle();
    const plant = (id: string, datasource: string) => {
      port.entitiesOf('workload').set(id, { identifier: id, properties: {}, relations: { Namespace: 'shop' } });
      port.datasources.set(`workload\u0000${id}`, datasource);
    };
    plant('stale-mine', 'kpromo-exporter/0.1 (statekey/k)');
    plant('stale-go', 'port-k8s-exporter/^0.3.4 (statekey/k)');
    plant('other-key', 'port-k8s-exporter/^0.3.4 (statekey/other)');
    plant('by-hand', 'Port UI');
    const r = await s.resync(['workload', 'namespace'], 0);
    expect(r).toEqual({ deleted: 2 });
    expect([...port.entitiesOf('workload').keys()].sort()).toEqual(['by-hand', 'live', 'other-key']);
    s.stop();
  });

  it('a search-query identifier updates the entity it resolves to, which then counts as desired', async () => {
    const s = portSink({ createMissingRelatedEntities: true });
    s.put(wl('web-1', { replicas: 1 }));
    await s.idle();
    const q = { combinator: 'and', rules: [{ property: '$identifier', operator: '=', value: 'web-1' }] };
    const m = finishEntity({ identifier: q, blueprint: 'workload', properties: { replicas: 5 }, relations: {} }, PORT);
    s.put(m);
    await s.idle();
    expect(port.entitiesOf('workload').get('web-1')?.properties.replicas).toBe(5);
    expect(s.desiredIdentifiers('workload').has('web-1')).toBe(true);
    // Port's exporter never deletes by a query: removing it sends no delete.
    const before = port.callCount();
    s.remove('workload', m.entity.identifier);
    await s.idle();
    expect(port.callCount()).toBe(before);
    s.stop();
  });
});
