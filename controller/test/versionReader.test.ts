import type { Application } from '@kpromo/api';
import { app, deployment, dg, env } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { versionReader } from '../src/candidates/versionReader.js';
import { ChangeLoggingCache, MemoryCache } from '../src/kube/memoryCache.js';
import { WorkloadChangeLog } from '../src/kube/workloadChangeLog.js';

describe('WorkloadChangeLog (what changed since a cursor)', () => {
  it('cannot tell on the first read, then lists the names changed after each cursor in order', () => {
    const log = new WorkloadChangeLog();
    const first = log.since();
    expect(first.names).toBeUndefined();
    log.changed('cart');
    log.changed('search');
    const second = log.since(first.cursor);
    expect(second.names).toEqual(['cart', 'search']);
    log.changed('cart');
    expect(log.since(second.cursor).names).toEqual(['cart']);
    expect(log.since(log.since(second.cursor).cursor).names).toEqual([]);
  });

  it('cannot tell across a reset, past its capacity, or for a cursor it never gave', () => {
    const log = new WorkloadChangeLog(4);
    const c = log.since().cursor;
    log.changed('a');
    log.reset();
    expect(log.since(c).names).toBeUndefined();
    const afterReset = log.since().cursor;
    for (let i = 0; i < 9; i++) log.changed(`w${i}`); // more than 2 x 4 kept: the oldest are trimmed
    expect(log.since(afterReset).names).toBeUndefined();
    const now = log.since().cursor;
    expect(log.since(now + 1).names).toBeUndefined();
    log.changed('late');
    expect(log.since(now).names).toEqual(['late']);
  });
});

function setup() {
  const cache = new ChangeLoggingCache();
  const dev = env('dev');
  cache.envs.push(dev);
  const cart = app('cart');
  const search = app('search');
  cache.apps.push(cart, search);
  cache.set(dev, 'cart', deployment('cart', `reg/shop/cart:v1.0.0@${dg('a')}`));
  cache.set(dev, 'search', deployment('search', `reg/shop/search:v2.0.0@${dg('b')}`));
  return { cache, dev, cart, search };
}

describe('versionReader (versions kept between answers, redone for what changed)', () => {
  it('reads a changed workload afresh and keeps the version of one that did not change', () => {
    const { cache, dev, cart, search } = setup();
    const r1 = versionReader(cache);
    expect(r1(cart, dev)).toMatchObject({ tag: 'v1.0.0', digest: dg('a'), health: 'Healthy' });
    const searchBefore = r1(search, dev);
    cache.set(dev, 'cart', deployment('cart', `reg/shop/cart:v1.1.0@${dg('c')}`, false));
    const r2 = versionReader(cache);
    expect(r2(cart, dev)).toMatchObject({ tag: 'v1.1.0', digest: dg('c'), health: 'Progressing' });
    expect(r2(search, dev)).toBe(searchBefore);
    cache.set(dev, 'cart', undefined);
    expect(versionReader(cache)(cart, dev)).toMatchObject({ health: 'Missing' });
  });

  it('reads everything afresh when the cache cannot tell what changed', () => {
    const { cache, dev, search } = setup();
    const before = versionReader(cache)(search, dev);
    cache.log.reset();
    const after = versionReader(cache)(search, dev);
    expect(after).not.toBe(before);
    expect(after).toEqual(before);
  });

  it('reads a replaced Application (the cache holds a new object) afresh without any workload change', () => {
    const { cache, dev, cart } = setup();
    expect(versionReader(cache)(cart, dev).environment).toBe('dev');
    // The Application now names only a workload that dev lacks.
    const changed: Application = { ...cart, spec: { ...cart.spec, workloads: [{ kind: 'Deployment', name: 'gone' }] } };
    cache.apps[0] = changed;
    expect(versionReader(cache)(changed, dev)).toMatchObject({ health: 'Missing' });
  });

  it('without a change feed, reads every version afresh (a new object per read)', () => {
    const cache = new MemoryCache();
    const dev = env('dev');
    const cart = app('cart');
    cache.workloads.set('dev/Deployment/cart', deployment('cart', `reg/shop/cart:v1.0.0@${dg('a')}`));
    const read = versionReader(cache);
    const v = read(cart, dev);
    expect(v).toMatchObject({ tag: 'v1.0.0' });
    cache.workloads.set('dev/Deployment/cart', deployment('cart', `reg/shop/cart:v1.2.0@${dg('d')}`));
    expect(read(cart, dev)).toMatchObject({ tag: 'v1.2.0' });
  });
});
