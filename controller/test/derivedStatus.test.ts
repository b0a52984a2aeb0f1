import type { PromotionFlow } from '@kpromo/api';
import { app, deployment, dg, env, flow } from '@kpromo/test-harness/objects';
import { describe, expect, it, vi } from 'vitest';
import { MemoryCache } from '../src/kube/memoryCache.js';
import { KPROMO_TYPES, resourcePath } from '../src/kube/paths.js';
import { deriveAndWrite } from '../src/reconcile/derivedStatus.js';
import { reconcileApplication } from '../src/reconcile/reconcileApplication.js';
import { reconcileEnvironment, reconcileFlow } from '../src/reconcile/reconcileStatus.js';
import { FakeKube } from './support/fakeKube.js';

describe('deriveAndWrite', () => {
  type S = { a: number; b: { c: number }; d?: string };
  const obj = { kind: 'PromotionFlow', metadata: { name: 'f' }, status: { a: 1, b: { c: 2 } } as S };
  it('writes only a status that differs semantically from the one the object has', async () => {
    const write = vi.fn(async () => undefined);
    // Key order and undefined fields are no change.
    expect(
      await deriveAndWrite<S, typeof obj>({
        read: () => obj,
        derive: () => ({ b: { c: 2 }, a: 1, d: undefined }),
        write,
      }),
    ).toBe(false);
    expect(write).not.toHaveBeenCalled();
    expect(await deriveAndWrite<S, typeof obj>({ read: () => obj, derive: () => ({ a: 2, b: { c: 2 } }), write })).toBe(
      true,
    );
    expect(write).toHaveBeenCalledWith(obj, { a: 2, b: { c: 2 } });
  });
  it('does nothing for a missing object or when the derivation says "not now"', async () => {
    const write = vi.fn(async () => undefined);
    expect(
      await deriveAndWrite<S, typeof obj>({ read: () => undefined, derive: () => ({ a: 1, b: { c: 2 } }), write }),
    ).toBe(false);
    expect(await deriveAndWrite<S, typeof obj>({ read: () => obj, derive: () => undefined, write })).toBe(false);
    expect(write).not.toHaveBeenCalled();
  });
});

describe('derived-status reconcilers', () => {
  const now = new Date('2026-12-02T10:00:00Z');
  function world() {
    const writes: string[] = [];
    const control = new FakeKube('control', (method, path) => writes.push(`${method} ${path}`));
    const cache = new MemoryCache();
    cache.envs = [env('dev'), env('stable')];
    cache.apps = [app('cart')];
    cache.flowList = [flow(['dev', 'stable'])];
    cache.workloads.set('dev/Deployment/cart', deployment('cart', `r/shop/cart:v2@${dg('a')}`));
    cache.workloads.set('stable/Deployment/cart', deployment('cart', `r/shop/cart:v1@${dg('b')}`));
    // The cache shows what the apiserver stores (with uid and resourceVersion).
    cache.envs = cache.envs.map((e) => control.seed(resourcePath(KPROMO_TYPES.Environment, 'ns', e.metadata.name), e));
    cache.apps = cache.apps.map((a) => control.seed(resourcePath(KPROMO_TYPES.Application, 'ns', a.metadata.name), a));
    cache.flowList = cache.flowList.map((f) => control.seed(resourcePath(KPROMO_TYPES.PromotionFlow, 'ns', 'main'), f));
    return { writes, control, cache };
  }

  it.each([
    ['PromotionFlow', reconcileFlow, 'main', 'promotionflows'],
    ['Environment', reconcileEnvironment, 'stable', 'environments'],
    ['Application', reconcileApplication, 'cart', 'applications'],
  ] as const)(
    '%s: writes its status once, then nothing while the cache is unchanged',
    async (kind, reconcile, name, plural) => {
      const w = world();
      expect(await reconcile(w.cache, w.control.rest, 'ns', name, now)).toBe(true);
      expect(w.writes).toEqual([`PUT /apis/promotions.kpromo.dev/v1alpha1/namespaces/ns/${plural}/${name}/status`]);
      const stored = w.control.objects.get(resourcePath(KPROMO_TYPES[kind], 'ns', name)) as PromotionFlow;
      expect(stored.status?.conditions?.[0]).toMatchObject({ type: 'Ready' });
      // The informer delivers the written object; reconciling again (later) writes nothing.
      const list = { PromotionFlow: 'flowList', Environment: 'envs', Application: 'apps' } as const;
      (w.cache[list[kind]] as Array<{ metadata: { name: string } }>) = (
        w.cache[list[kind]] as Array<{ metadata: { name: string } }>
      ).map((o) => (o.metadata.name === name ? structuredClone(stored) : o));
      expect(await reconcile(w.cache, w.control.rest, 'ns', name, new Date('2026-12-02T11:00:00Z'))).toBe(false);
      expect(w.writes).toHaveLength(1);
    },
  );

  it('Application: waits for Environments whose caches are still syncing', async () => {
    const w = world();
    w.cache.envStates.set('stable', { synced: false, helmReleases: false });
    expect(await reconcileApplication(w.cache, w.control.rest, 'ns', 'cart', now)).toBe(false);
    expect(w.writes).toEqual([]);
  });

  it('a missing object is a no-op', async () => {
    const w = world();
    expect(await reconcileFlow(w.cache, w.control.rest, 'ns', 'gone', now)).toBe(false);
  });
});
