// The controller's watch of Events about kpromo objects (MCP `state` reads them from it), against a
// real apiserver: it keeps only Events whose involved object is a kpromo object, answers per object,
// follows new Events, and a client that may not list Events gives up (undefined: the caller asks
// the apiserver) instead of retrying a 403 forever.

import { waitFor } from '@kpromo/test-harness';
import { deleteNs, ensureNs, restFor } from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KpromoEventCache } from '../src/kube/kpromoEvents.js';
import { EVENT, resourcePath } from '../src/kube/paths.js';

const NS = `kev-${Math.random().toString(36).slice(2, 7)}`;
const rest = restFor(inject('kubeconfig'), 'dev');
const caches: KpromoEventCache[] = [];

const event = (name: string, involved: { apiVersion: string; kind: string; name: string }, reason: string) => ({
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { name, namespace: NS },
  involvedObject: { ...involved, namespace: NS },
  reason,
  message: `${reason} happened`,
  type: 'Normal',
  source: { component: 'kpromo-test' },
  firstTimestamp: new Date().toISOString(),
  lastTimestamp: new Date().toISOString(),
  count: 1,
});
const APP = { apiVersion: 'promotions.kpromo.dev/v1alpha1', kind: 'Application', name: 'cart' };

beforeAll(async () => {
  await ensureNs(rest, NS);
  await rest.create(resourcePath(EVENT, NS), event('cart.1', APP, 'Promoted'));
  await rest.create(resourcePath(EVENT, NS), event('cart.2', { ...APP, name: 'search' }, 'Promoted'));
  await rest.create(
    resourcePath(EVENT, NS),
    event('cart.3', { apiVersion: 'apps/v1', kind: 'Deployment', name: 'cart' }, 'ScalingReplicaSet'),
  );
});

afterAll(async () => {
  for (const c of caches) c.stop();
  await deleteNs(rest, NS);
});

describe('KpromoEventCache', () => {
  it('answers per kpromo object from its watch, without Events about other kinds, and follows new ones', async () => {
    const cache = new KpromoEventCache(rest);
    caches.push(cache);
    expect(cache.about(NS, 'Application', 'cart')).toBeUndefined(); // not started: ask the apiserver
    cache.start([NS]);
    const first = await waitFor('the first list', async () => cache.about(NS, 'Application', 'cart'), 30_000);
    expect(first.map((e) => e.reason)).toEqual(['Promoted']);
    expect(cache.about(NS, 'Deployment', 'cart')).toEqual([]);
    expect(cache.about(NS, 'Application', 'search')?.map((e) => e.metadata.name)).toEqual(['cart.2']);
    await rest.create(resourcePath(EVENT, NS), event('cart.4', APP, 'RolledBack'));
    const both = await waitFor(
      'the new Event',
      async () => {
        const l = cache.about(NS, 'Application', 'cart');
        return l && l.length === 2 ? l : undefined;
      },
      30_000,
    );
    expect(both.map((e) => e.reason).sort()).toEqual(['Promoted', 'RolledBack']);
  });

  it('a client that may not list Events stops watching and leaves the answer to the apiserver', async () => {
    const cache = new KpromoEventCache(rest.as({ username: `no-events-${NS}`, groups: [] }));
    caches.push(cache);
    cache.start([NS]);
    // Forbidden: never an answer from the cache (undefined), and the informer is given up.
    await new Promise((r) => setTimeout(r, 3000));
    expect(cache.about(NS, 'Application', 'cart')).toBeUndefined();
    expect((cache as unknown as { informers: Map<string, unknown> }).informers.size).toBe(0);
  });
});
