import { kubeConfigFor, waitFor } from '@kpromo/test-harness';
import {
  app,
  crs,
  deleteNamespace,
  ensureKpromoCrds,
  ensureNamespace,
  env,
  waitForEstablished,
} from '@kpromo/test-harness/crs';
import { PortStandIn } from '@kpromo/test-harness/port';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ExporterConfig, parseConfig } from '../src/config.js';
import { DEFAULT_RESOURCES } from '../src/defaults.js';
import { createLogger } from '../src/log.js';
import { compileResource, mapObjects, STATE_KEY_PROPERTY } from '../src/mapEntity.js';
import { parseKind } from '../src/resourceKind.js';
import { type RunningExporter, runExporter } from '../src/run.js';

const suffix = Math.random().toString(36).slice(2, 7);
const NS = `exp-${suffix}`;
const STATE_KEY = `exp-${suffix}`;
const WIDGET_GROUP = `exp-${suffix}.kpromo.test`;
const CLUSTERS = ['dev', 'stable'];
const log = createLogger(process.env.LOG_LEVEL ?? 'silent');
const WEBHOOK = 'https://backstage.example.com/api/promotions/port/webhook';

let port: PortStandIn;
let cfg: ExporterConfig;
let running: RunningExporter;
const kcs: Record<string, k8s.KubeConfig> = {};

/** The mapped cluster state: every CR in our namespace, through the same config. */
async function expectedEntities(): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  for (const cluster of CLUSTERS) {
    const api = kcs[cluster].makeApiClient(k8s.CustomObjectsApi);
    for (const res of cfg.resources) {
      const k = parseKind(res.kind);
      const list = (await api
        .listNamespacedCustomObject({ group: k.group, version: k.version, plural: k.plural, namespace: NS })
        .catch(() => ({ items: [] }))) as { items: unknown[] };
      const results = await mapObjects(compileResource(res)(cluster), list.items, STATE_KEY);
      for (const r of results)
        if (r.ok) for (const m of r.entities) out.set(`${m.blueprint}/${m.entity.identifier}`, m.entity);
    }
  }
  return out;
}

/** Entities in the stand-in owned by this exporter. */
function ownedInPort(): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const [bp, m] of port.entities)
    for (const [id, e] of m) if (e.properties[STATE_KEY_PROPERTY] === STATE_KEY) out.set(`${bp}/${id}`, e);
  return out;
}

async function converged(what: string, timeoutMs = 60_000): Promise<void> {
  let last = '';
  await waitFor(
    what,
    async () => {
      const want = await expectedEntities();
      const got = ownedInPort();
      const sortMap = (m: Map<string, unknown>) =>
        JSON.stringify([...m.entries()].sort(([a], [b]) => a.localeCompare(b)));
      last = `want ${[...want.keys()].sort().join(',')} got ${[...got.keys()].sort().join(',')}`;
      return want.size > 0 && sortMap(want) === sortMap(got);
    },
    timeoutMs,
  ).catch((e) => {
    throw new Error(`${(e as Error).message}; ${last}`);
  });
  expect(port.violations).toEqual([]);
}

const entity = (bp: string, id: string) => port.entitiesOf(bp).get(id);

describe('exporter → Port stand-in against the real clusters', () => {
  beforeAll(async () => {
    const kubeconfig = inject('kubeconfig');
    for (const c of CLUSTERS) {
      kcs[c] = kubeConfigFor(c, kubeconfig);
      await ensureKpromoCrds(kcs[c]);
      await ensureNamespace(kcs[c], NS);
    }
    port = new PortStandIn();
    await port.start();
    // Only our namespace, so objects other test files create never enter the comparison.
    const onlyNs = { query: `.metadata.namespace == "${NS}"` };
    cfg = await parseConfig({
      stateKey: STATE_KEY,
      clusters: CLUSTERS.map((name) => ({ name, context: name, kubeconfig })),
      port: { baseUrl: port.url, clientId: port.clientId, clientSecret: port.clientSecret, concurrency: 4 },
      resyncIntervalSeconds: 0,
      includeDefaults: true,
      crdsToDiscover: `.spec.group == "${WIDGET_GROUP}"`,
      actionsWebhookUrl: WEBHOOK,
      blueprints: [
        {
          identifier: 'expOwnership',
          title: 'Ownership',
          schema: { properties: { owner: { type: 'string', title: 'Owner' } } },
          relations: { app: { target: 'kpromoApplication', required: false, many: false } },
        },
      ],
      resources: [
        {
          // A second mapping of Applications that fails on purpose for objects labelled exp-broken.
          kind: `${DEFAULT_RESOURCES[1].kind}`,
          selector: onlyNs,
          port: {
            entity: {
              mappings: [
                {
                  identifier:
                    'if .metadata.labels["exp-broken"] == "true" then error("label exp-broken is set") else $cluster + ":" + .metadata.namespace + ":" + .metadata.name + ":owner" end',
                  blueprint: '"expOwnership"',
                  title: '.spec.owner',
                  properties: { owner: '.spec.owner' },
                  relations: { app: '$cluster + ":" + .metadata.namespace + ":" + .metadata.name' },
                },
              ],
            },
          },
        },
      ],
    });
    for (const r of cfg.resources) r.selector ??= onlyNs;

    const dev = crs(kcs.dev, NS);
    await dev.create('environments', env('dev'));
    await dev.create('environments', env('prod', 'production'));
    await dev.create('applications', app('checkout', 'team-a', ['dev']));
    await dev.create('promotionflows', {
      metadata: { name: 'shop' },
      spec: { stages: [{ environment: 'dev' }, { environment: 'prod' }] },
    });
    await dev.create('promotionplans', {
      metadata: { name: 'plan-1' },
      spec: {
        flow: 'shop',
        from: 'dev',
        to: 'prod',
        candidates: [{ application: 'checkout', from: { tag: 'v1.0.0', digest: `sha256:${'a'.repeat(64)}` } }],
      },
    });
    // Same names in another cluster must not collide.
    await crs(kcs.stable, NS).create('applications', app('checkout', 'team-b'));
    running = runExporter(
      cfg,
      log,
      CLUSTERS.map((name) => ({ name, kc: kcs[name] })),
    );
  });

  afterAll(async () => {
    running?.stop();
    await port?.stop();
    for (const c of CLUSTERS) if (kcs[c]) await deleteNamespace(kcs[c], NS);
    if (kcs.dev) {
      await kcs.dev
        .makeApiClient(k8s.ApiextensionsV1Api)
        .deleteCustomResourceDefinition({ name: `expwidgets.${WIDGET_GROUP}` })
        .catch(() => undefined);
    }
  });

  it('creates blueprints and entities with properties and relations', async () => {
    await converged('initial sync');
    const a = entity('kpromoApplication', `dev:${NS}:checkout`);
    expect(a?.team).toBe('team-a');
    expect(a?.properties).toMatchObject({
      cluster: 'dev',
      namespace: NS,
      repository: 'shop/checkout',
      owner: 'team-a',
    });
    expect(a?.relations).toEqual({ environments: [`dev:${NS}:dev`] });
    expect(entity('kpromoApplication', `stable:${NS}:checkout`)?.team).toBe('team-b');
    expect(entity('kpromoPromotionPlan', `dev:${NS}:plan-1`)?.relations).toEqual({
      flow: `dev:${NS}:shop`,
      from: `dev:${NS}:dev`,
      to: `dev:${NS}:prod`,
      applications: [`dev:${NS}:checkout`],
    });
    expect(entity('kpromoPromotionFlow', `dev:${NS}:shop`)?.relations).toEqual({
      stages: [`dev:${NS}:dev`, `dev:${NS}:prod`],
    });
    expect(entity('kpromoEnvironment', `dev:${NS}:prod`)?.properties.tier).toBe('production');
    const bp = port.blueprints.get('kpromoApplication') as { schema: { properties: Record<string, unknown> } };
    expect(bp.schema.properties[STATE_KEY_PROPERTY]).toBeDefined();
  });

  it('propagates spec and status updates, and skips unchanged upserts', async () => {
    const dev = crs(kcs.dev, NS);
    await dev.patch('applications', 'checkout', { spec: { owner: 'team-z' } });
    await dev.patchStatus('applications', 'checkout', {
      versions: [
        { environment: 'dev', tag: 'v2', health: 'Healthy' },
        { environment: 'prod', tag: 'v1', health: 'Healthy' },
      ],
    });
    await waitFor(
      'update',
      async () =>
        entity('kpromoApplication', `dev:${NS}:checkout`)?.relations.environments?.toString() ===
        `dev:${NS}:dev,dev:${NS}:prod`,
    );
    expect(entity('kpromoApplication', `dev:${NS}:checkout`)?.team).toBe('team-z');
    await converged('after update');

    // A label that no mapping reads produces a watch event but no Port write.
    const writes = port.callCount(/^POST .*\/entities/);
    const skipped = running.sink.stats.skippedUnchanged;
    await dev.patch('applications', 'checkout', { metadata: { labels: { unrelated: 'x' } } });
    await waitFor('skip of an unchanged entity', async () => running.sink.stats.skippedUnchanged > skipped, 20_000);
    await running.sink.idle();
    expect(port.callCount(/^POST .*\/entities/)).toBe(writes);
  });

  it('propagates deletes', async () => {
    const dev = crs(kcs.dev, NS);
    await dev.create('applications', app('temp'));
    await waitFor('temp created', async () => entity('kpromoApplication', `dev:${NS}:temp`));
    await dev.delete('applications', 'temp');
    await waitFor(
      'temp deleted',
      async () => !entity('kpromoApplication', `dev:${NS}:temp`) && !entity('expOwnership', `dev:${NS}:temp:owner`),
    );
    await converged('after delete');
  });

  it('recovers deletes missed while the watch was down (relist diff)', async () => {
    const dev = crs(kcs.dev, NS);
    await dev.create('applications', app('missed'));
    await waitFor('missed created', async () => entity('kpromoApplication', `dev:${NS}:missed`));
    const resume = running.exporter.pauseWatches();
    await dev.delete('applications', 'missed');
    await dev.create('applications', app('while-paused'));
    resume();
    await waitFor(
      'missed delete recovered',
      async () =>
        !entity('kpromoApplication', `dev:${NS}:missed`) && entity('kpromoApplication', `dev:${NS}:while-paused`),
    );
    await converged('after relist');
  });

  const faults = [
    {
      name: '429 with x-ratelimit headers',
      fault: {
        status: 429 as const,
        times: 3,
        headers: { 'x-ratelimit-limit': '100', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1' },
      },
    },
    { name: '5xx', fault: { status: 503 as const, times: 4 } },
    { name: 'Port down beyond client retries', fault: { status: 500 as const, times: 12 } },
  ];
  for (const [i, f] of faults.entries()) {
    it(`converges after ${f.name}`, async () => {
      port.faults = [{ ...f.fault }];
      const before = port.callCount();
      const dev = crs(kcs.dev, NS);
      await dev.create('applications', app(`fault-${i}`, 'team-f', ['prod']));
      await dev.patch('environments', 'dev', { spec: { tier: i % 2 ? 'staging' : 'preview' } });
      await converged(`after ${f.name}`);
      expect(port.faults[0].times).toBe(0);
      expect(port.calls.slice(before).some((c) => c.status === f.fault.status)).toBe(true);
    });
  }

  it('refreshes the token on 401 and survives slow answers', async () => {
    port.faults = [];
    const fetches = running.stats.tokenFetches;
    port.expireTokens();
    port.delayMs = 400;
    const dev = crs(kcs.dev, NS);
    await dev.create('applications', app('after-expiry'));
    await converged('after token expiry with slow answers');
    port.delayMs = 0;
    expect(running.stats.tokenFetches).toBeGreaterThan(fetches);
    expect(port.calls.some((c) => c.status === 401)).toBe(true);
  });

  it('resync deletes stale owned entities, keeps foreign ones, and holds off when mapping failed', async () => {
    await running.sink.idle();
    const stale = {
      identifier: `dev:${NS}:ghost`,
      properties: { [STATE_KEY_PROPERTY]: STATE_KEY, owner: 'x' },
      relations: {},
    };
    const foreign = {
      identifier: `dev:${NS}:foreign`,
      properties: { [STATE_KEY_PROPERTY]: 'someone-else', owner: 'y' },
      relations: {},
    };
    const manual = { identifier: `dev:${NS}:manual`, properties: { owner: 'z' }, relations: {} };
    for (const e of [stale, foreign, manual]) port.entitiesOf('kpromoApplication').set(e.identifier, e);

    // A mapping error makes the sync incomplete: resync must not delete anything.
    await crs(kcs.dev, NS).patch('applications', 'checkout', { metadata: { labels: { 'exp-broken': 'true' } } });
    await waitFor('mapping error recorded', async () => running.exporter.mappingErrors.size > 0);
    const held = await running.resync();
    expect(held.skipped).toMatch(/failed to map/);
    expect(entity('kpromoApplication', stale.identifier)).toBeDefined();
    // The broken object keeps its previous entity rather than losing it.
    expect(entity('expOwnership', `dev:${NS}:checkout:owner`)).toBeDefined();

    await crs(kcs.dev, NS).patch('applications', 'checkout', { metadata: { labels: { 'exp-broken': null } } });
    await waitFor('mapping error cleared', async () => running.exporter.mappingErrors.size === 0);
    const r = await running.resync();
    expect(r.skipped).toBeUndefined();
    expect(r.deleted).toBe(1);
    expect(entity('kpromoApplication', stale.identifier)).toBeUndefined();
    expect(entity('kpromoApplication', foreign.identifier)).toBeDefined();
    expect(entity('kpromoApplication', manual.identifier)).toBeDefined();
    await converged('after resync');
  });

  it('discovers a new CRD without restart, follows its removal and re-addition', async () => {
    const ext = kcs.dev.makeApiClient(k8s.ApiextensionsV1Api);
    const name = `expwidgets.${WIDGET_GROUP}`;
    const widgetCrd: k8s.V1CustomResourceDefinition = {
      metadata: { name },
      spec: {
        group: WIDGET_GROUP,
        scope: 'Namespaced',
        names: { kind: 'ExpWidget', plural: 'expwidgets', singular: 'expwidget', listKind: 'ExpWidgetList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: { type: 'object', properties: { size: { type: 'integer' }, color: { type: 'string' } } },
                },
              },
            },
          },
        ],
      },
    };
    const createWidget = (w: string, size: number) =>
      kcs.dev.makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject({
        group: WIDGET_GROUP,
        version: 'v1',
        namespace: NS,
        plural: 'expwidgets',
        body: {
          apiVersion: `${WIDGET_GROUP}/v1`,
          kind: 'ExpWidget',
          metadata: { name: w },
          spec: { size, color: 'red' },
        },
      });
    await ext.createCustomResourceDefinition({ body: widgetCrd });
    await waitForEstablished(ext, name);
    await createWidget('w1', 3);
    await waitFor('widget entity', async () => entity('ExpWidget', `dev:${NS}:w1`), 60_000);
    expect(entity('ExpWidget', `dev:${NS}:w1`)?.properties).toMatchObject({ size: 3, color: 'red', cluster: 'dev' });
    const bp = port.blueprints.get('ExpWidget') as { schema: { properties: Record<string, { type: string }> } };
    expect(bp.schema.properties.size.type).toBe('number');
    // Its self-service actions, on its blueprint, sending runs to the promotions backend.
    const ids = ['create_ExpWidget', 'update_ExpWidget', 'delete_ExpWidget'];
    await waitFor('widget actions', async () => ids.every((id) => port.actions.has(id)), 30_000);
    for (const id of ids)
      expect(port.actions.get(id)).toMatchObject({
        trigger: { blueprintIdentifier: 'ExpWidget' },
        invocationMethod: { type: 'WEBHOOK', url: WEBHOOK },
      });
    expect(
      (port.actions.get('create_ExpWidget') as { trigger: { userInputs: { properties: object } } }).trigger.userInputs
        .properties,
    ).toMatchObject({ size: { type: 'number' }, color: { type: 'string' }, name: { type: 'string' } });

    // Removing the CRD removes its objects; the entity follows.
    await ext.deleteCustomResourceDefinition({ name });
    await waitFor('widget entity removed with its CRD', async () => !entity('ExpWidget', `dev:${NS}:w1`), 90_000);
    // Re-adding the CRD (and an object) is picked up by the same watcher, still without a restart.
    await waitFor(
      'CRD deletion finished',
      () =>
        ext.readCustomResourceDefinition({ name }).then(
          () => false,
          (e) => (e as { code?: number }).code === 404,
        ),
      90_000,
    );
    await ext.createCustomResourceDefinition({ body: widgetCrd });
    await waitForEstablished(ext, name);
    await createWidget('w2', 5);
    await waitFor('widget entity after CRD re-added', async () => entity('ExpWidget', `dev:${NS}:w2`), 60_000);
    expect(entity('ExpWidget', `dev:${NS}:w2`)?.properties.size).toBe(5);
    expect(port.violations).toEqual([]);
  });
});
