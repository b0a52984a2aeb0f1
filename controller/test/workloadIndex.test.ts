import { app } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { indexByWorkloadName } from '../src/kube/liveCache.js';

describe('indexByWorkloadName (which Applications a workload event concerns)', () => {
  it('finds every Application naming the workload in its namespace, once each, and no other', () => {
    const cart = app('cart', {
      workloads: [
        { kind: 'Deployment', name: 'cart' },
        // Same name, another kind and environment: still one entry for cart.
        { kind: 'StatefulSet', name: 'cart', environments: ['prod'] },
        { kind: 'Deployment', name: 'cart-worker' },
      ],
    });
    const search = app('search', { workloads: [{ kind: 'Deployment', name: 'cart-worker' }] });
    const elsewhere = { ...app('cart'), metadata: { name: 'cart', namespace: 'other' } };
    const index = indexByWorkloadName([cart, search, elsewhere]);
    expect(index.get('ns/cart')).toEqual([cart]);
    expect(index.get('ns/cart-worker')).toEqual([cart, search]);
    expect(index.get('other/cart')).toEqual([elsewhere]);
    expect(index.get('ns/search')).toBeUndefined();
  });
});
