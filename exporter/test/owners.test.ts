import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';
import { type EntitySink, Exporter } from '../src/exporter.js';
import { createLogger } from '../src/log.js';
import { type CompiledResource, compileResource, type MappedEntity } from '../src/mapEntity.js';
import type { KubeObject, WatchEvent } from '../src/watchResources.js';

// An entity may come from several objects (here: Deployments naming the same app); it leaves
// Port only when no object maps to it any more, and an object that changes entity releases the old one.

const log = createLogger('silent');

const deployment = (name: string, app: string): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'shop' },
  spec: { app },
});

async function setup() {
  const cfg = await parseConfig({
    resources: [
      {
        kind: 'apps/v1/deployments',
        port: { entity: { mappings: [{ identifier: '.spec.app', blueprint: '"service"' }] } },
      },
    ],
  });
  const puts: MappedEntity[] = [];
  const removed: string[] = [];
  const sink: EntitySink = {
    put: (m) => void puts.push(m),
    remove: (bp, id) => void removed.push(`${bp}/${id}`),
  };
  const exporter = new Exporter({ config: cfg, clusters: [], sink, log, batchWindowMs: 0 });
  const program: CompiledResource = compileResource(cfg.resources[0])('current');
  const send = (e: WatchEvent) =>
    (
      exporter as unknown as {
        onEvent(s: string, p: CompiledResource, l: typeof log, e: WatchEvent): Promise<void> | undefined;
      }
    ).onEvent('current|apps/v1/deployments#0', program, log, e);
  return { puts, removed, send };
}

describe('entities with several source objects', () => {
  it('stays while any object maps to it; goes with the last one', async () => {
    const { puts, removed, send } = await setup();
    await send({ type: 'upsert', object: deployment('cart-api', 'cart') });
    await send({ type: 'upsert', object: deployment('cart-worker', 'cart') });
    await send({ type: 'upsert', object: deployment('cart-cron', 'cart') });
    expect(puts.map((m) => m.entity.identifier)).toEqual(['cart', 'cart', 'cart']);
    await send({ type: 'delete', object: deployment('cart-api', 'cart') });
    await send({ type: 'delete', object: deployment('cart-worker', 'cart') });
    expect(removed).toEqual([]);
    await send({ type: 'delete', object: deployment('cart-cron', 'cart') });
    expect(removed).toEqual(['service/cart']);
  });

  it('an object that moves to another entity releases the old one only when it was the last', async () => {
    const { removed, send } = await setup();
    await send({ type: 'upsert', object: deployment('a', 'cart') });
    await send({ type: 'upsert', object: deployment('b', 'cart') });
    await send({ type: 'upsert', object: deployment('a', 'checkout') });
    expect(removed).toEqual([]);
    await send({ type: 'upsert', object: deployment('b', 'checkout') });
    expect(removed).toEqual(['service/cart']);
    // Upserting the same object again changes nothing about ownership.
    await send({ type: 'upsert', object: deployment('b', 'checkout') });
    await send({ type: 'delete', object: deployment('a', 'checkout') });
    expect(removed).toEqual(['service/cart']);
    await send({ type: 'delete', object: deployment('b', 'checkout') });
    expect(removed).toEqual(['service/cart', 'service/checkout']);
  });
});
