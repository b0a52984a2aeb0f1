// diff() over a cache that reports its changes: digests resolved from the registry for tag-only
// images land in the answer without changing the versions kept for later answers.

import { app, deployment, dg, env, flow } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { Access } from '../src/api/access.js';
import type { ApiContext } from '../src/api/context.js';
import { diff } from '../src/api/promotions.js';
import type { Caller } from '../src/auth/identity.js';
import { versionReader } from '../src/candidates/versionReader.js';
import { ChangeLoggingCache } from '../src/kube/memoryCache.js';

const caller: Caller = { username: 'alice', groups: [], source: 'static' };

function setup(resolveDigest: ApiContext['resolveDigest']) {
  const cache = new ChangeLoggingCache();
  const [dev, stable] = [env('dev'), env('stable')];
  cache.envs.push(dev, stable);
  cache.flowList.push(flow(['dev', 'stable']));
  const cart = app('cart');
  cache.apps.push(cart);
  cache.set(dev, 'cart', deployment('cart', 'reg-dev.local:5000/shop/cart:v1.1.0'));
  cache.set(stable, 'cart', deployment('cart', `reg-stable.local:5000/shop/cart:v1.0.0@${dg('b')}`));
  const ctx: ApiContext = {
    cache,
    control: undefined as never,
    access: new Access({ check: async () => ({ allowed: true, reason: 'test' }) }),
    namespace: 'ns',
    resolveDigest,
  };
  return { ctx, cache, dev, cart };
}

describe('diff with digests resolved from the registry', () => {
  it('pins a tag-only source image by the registry digest and leaves the kept version as read', async () => {
    const asked: string[] = [];
    const { ctx, cache, dev, cart } = setup(async (reg, repository, tag) => {
      asked.push(`${reg.host} ${repository}:${tag}`);
      return repository === 'shop/cart' && tag === 'v1.1.0' ? dg('a') : undefined;
    });
    const d = await diff(ctx, caller, { namespace: 'ns', from: 'dev', to: 'stable' });
    expect(d.candidates).toEqual([
      { application: 'cart', from: { tag: 'v1.1.0', digest: dg('a') }, to: { tag: 'v1.0.0', digest: dg('b') } },
    ]);
    expect(asked).toEqual(['reg-dev.local:5000 shop/cart:v1.1.0']);
    expect(versionReader(cache)(cart, dev).digest).toBeUndefined();
  });

  it('skips the application as NoDigest when the registry cannot resolve the tag', async () => {
    const { ctx } = setup(async () => {
      throw new Error('registry unreachable');
    });
    const d = await diff(ctx, caller, { namespace: 'ns', from: 'dev', to: 'stable' });
    expect(d.candidates).toEqual([]);
    expect(d.skipped).toEqual([
      {
        application: 'cart',
        reason: 'NoDigest',
        message:
          'dev runs v1.1.0 without a pinned digest, and the registry of Environment dev could not be read for its digest: registry unreachable',
      },
    ]);
  });
});
