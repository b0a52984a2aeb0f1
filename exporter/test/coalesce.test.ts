import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { type EntitySink, Exporter } from '../src/exporter.js';
import { loadJq } from '../src/jq.js';
import { createLogger } from '../src/log.js';
import { type CompiledResource, compileResource, type MappedEntity } from '../src/mapEntity.js';
import type { KubeObject, WatchEvent } from '../src/watchResources.js';

// Live events are coalesced per watched resource for a short window: one jq call and full bulk
// calls per burst, the newest event per object wins, and a full window (20) goes at once.

const log = createLogger('silent');
let jqCalls = 0;
let restore: () => void;

beforeEach(async () => {
  const jq = await loadJq();
  jq.raw('null', '.', ['-c']);
  const raw = jq.raw.bind(jq);
  jqCalls = 0;
  jq.raw = (...a: Parameters<typeof jq.raw>) => {
    jqCalls++;
    return raw(...a);
  };
  restore = () => {
    jq.raw = raw;
  };
});
afterEach(() => restore());

const deployment = (name: string, replicas = 1): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'shop' },
  spec: { replicas },
});

async function setup(batchWindowMs: number) {
  const cfg = await parseConfig({
    resources: [
      {
        kind: 'apps/v1/deployments',
        port: {
          entity: {
            mappings: [
              { identifier: '.metadata.name', blueprint: '"workload"', properties: { replicas: '.spec.replicas' } },
            ],
          },
        },
      },
    ],
  });
  const puts: Array<{ m: MappedEntity; at: number }> = [];
  const removed: string[] = [];
  const sink: EntitySink = {
    put: (m) => void puts.push({ m, at: performance.now() }),
    remove: (_bp, id) => void removed.push(id),
  };
  const exporter = new Exporter({ config: cfg, clusters: [], sink, log, batchWindowMs });
  const program: CompiledResource = compileResource(cfg.resources[0])('current');
  // The watcher's callback, as ResourceWatcher calls it for each event.
  const send = (e: WatchEvent) =>
    (
      exporter as unknown as {
        onEvent(s: string, p: CompiledResource, l: typeof log, e: WatchEvent): Promise<void> | undefined;
      }
    ).onEvent('current|apps/v1/deployments#0', program, log, e);
  jqCalls = 0;
  return { exporter, puts, removed, send };
}

describe('live event coalescing', () => {
  it('maps a burst in one jq call per window; 20 waiting changes go at once', async () => {
    const { puts, send } = await setup(40);
    const pending: Array<Promise<void> | undefined> = [];
    for (let i = 0; i < 20; i++) pending.push(send({ type: 'upsert', object: deployment(`d${i}`) }));
    await Promise.all(pending);
    // A full window goes without waiting: the 20th event's callback resolves once it is handed over.
    expect(puts.length).toBe(20);
    for (let i = 20; i < 25; i++) void send({ type: 'upsert', object: deployment(`d${i}`) });
    await new Promise((r) => setTimeout(r, 10));
    expect(puts.length).toBe(20);
    await new Promise((r) => setTimeout(r, 60));
    expect(puts.length).toBe(25);
    expect(jqCalls).toBe(2);
  });

  it('the newest event per object wins; a delete in the same window drops the upsert', async () => {
    const { puts, removed, send } = await setup(20);
    void send({ type: 'upsert', object: deployment('a', 1) });
    void send({ type: 'upsert', object: deployment('b', 1) });
    // b's entity exists from an earlier window, so its delete reaches the sink.
    await new Promise((r) => setTimeout(r, 50));
    puts.length = 0;
    for (let v = 2; v <= 6; v++) void send({ type: 'upsert', object: deployment('a', v) });
    void send({ type: 'upsert', object: deployment('b', 9) });
    void send({ type: 'delete', object: deployment('b', 9) });
    await new Promise((r) => setTimeout(r, 50));
    expect(puts.map((p) => [p.m.entity.identifier, p.m.entity.properties.replicas])).toEqual([['a', 6]]);
    expect(removed).toEqual(['b']);
  });

  it('a window of 0 handles each event as it comes', async () => {
    const { puts, send } = await setup(0);
    await send({ type: 'upsert', object: deployment('x') });
    expect(puts.length).toBe(1);
  });
});
