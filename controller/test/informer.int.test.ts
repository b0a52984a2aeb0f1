import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { defaultKubeconfigPath, waitFor } from '@kpromo/test-harness';
import { deleteNs, ensureNs, restFor } from '@kpromo/test-harness/controller';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Informer, type InformerEvent, type KObject } from '../src/kube/informer.js';
import { KubeRest, type RequestOptions } from '../src/kube/rest.js';

const kubeconfig = process.env.KUBECONFIG ?? defaultKubeconfigPath();
const dev = restFor(kubeconfig, 'dev');
const NS = `informer-${Math.random().toString(36).slice(2, 7)}`;
const PATH = `/api/v1/namespaces/${NS}/configmaps`;
/** Only this test's ConfigMaps (every namespace also has kube-root-ca.crt). */
const LABEL = 'kpromo.dev/informer-test';

/** Requests for PATH: lists through KubeRest.request (wrapped), watches as sent on the wire (undici). */
const lists: string[] = [];
const watches: string[] = [];
const request = KubeRest.prototype.request;
const onRequest = (m: unknown) => {
  const r = (m as { request: { method: string; path: string } }).request;
  if (r.path.startsWith(`${PATH}?`) && /[?&]watch=true/.test(r.path)) watches.push(r.path);
};

const configMap = (name: string, data: Record<string, string> = {}) =>
  dev.apply(
    `${PATH}/${name}`,
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS, labels: { [LABEL]: 'yes' } }, data },
    'ctl-test',
  );

let inf: Informer<KObject & { data?: Record<string, string> }>;
const events: Array<[InformerEvent, string]> = [];

beforeAll(async () => {
  KubeRest.prototype.request = function (this: KubeRest, method: string, path: string, opts?: RequestOptions) {
    if (method === 'GET' && path === PATH) lists.push(path);
    return request.call(this, method, path, opts);
  } as typeof request;
  subscribe('undici:request:create', onRequest);
  await ensureNs(dev, NS);
  await configMap('first');
  inf = new Informer(dev, PATH, undefined, { labelSelector: LABEL });
  inf.on((t, o) => events.push([t, o.metadata.name]));
  inf.start();
  await inf.waitForSync();
  await waitFor('watch open', async () => watches.length === 1);
});

afterAll(async () => {
  inf?.stop();
  KubeRest.prototype.request = request;
  unsubscribe('undici:request:create', onRequest);
  await deleteNs(dev, NS);
});

describe('Informer against the apiserver', () => {
  it('keeps one watch open through 40 s of silence (no reopen, no relist), then still delivers', async () => {
    expect(events).toEqual([['add', 'first']]);
    const silence = 40_000; // the client used to give up after 30 s without data
    await new Promise((r) => setTimeout(r, silence));
    expect({ lists: lists.length, watches: watches.length, errors: inf.lastError }).toEqual({
      lists: 1,
      watches: 1,
      errors: undefined,
    });
    expect(watches[0]).toMatch(/allowWatchBookmarks=true/);
    const timeout = Number(/timeoutSeconds=(\d+)/.exec(watches[0])?.[1]);
    expect(timeout).toBeGreaterThanOrEqual(300);
    expect(timeout).toBeLessThanOrEqual(600);
    await configMap('second', { a: '1' });
    await waitFor('second delivered', async () => events.some(([t, n]) => t === 'add' && n === 'second'), 10_000);
    expect(watches).toHaveLength(1);
    expect(inf.stats.watches).toBe(1);
  }, 75_000);

  // The 410 Gone relist path is covered by controller/test/informer.test.ts. On a freshly started
  // apiserver a watch from resourceVersion 1 is served, not answered 410 (even after an etcd
  // compaction), so the real-apiserver version of that test only passed on long-running clusters.
});

describe('Informer with an accept filter (a shard keeping only its namespaces)', () => {
  it('keeps only accepted objects, forgets one that stops being accepted, and relistNow applies a changed filter before it resolves', async () => {
    let wanted = new Set(['keep-a']);
    const seen: Array<[InformerEvent, string]> = [];
    const f = new Informer<KObject>(dev, PATH, undefined, {
      labelSelector: LABEL,
      accept: (o) => wanted.has(o.metadata.name),
    });
    f.on((t, o) => seen.push([t, o.metadata.name]));
    try {
      await configMap('keep-a');
      await configMap('keep-b');
      f.start();
      await f.waitForSync();
      expect(f.list().map((o) => o.metadata.name)).toEqual(['keep-a']);
      // Watched, but not accepted: never stored, never reported.
      await configMap('keep-c');
      await configMap('keep-a', { v: '2' });
      await waitFor('update of keep-a', async () => seen.some(([t, n]) => t === 'update' && n === 'keep-a'), 10_000);
      expect(seen.some(([, n]) => n !== 'keep-a')).toBe(false);
      // The filter changes: b and c join, a leaves. After relistNow resolves the store and the
      // handlers have caught up, without waiting for any further event.
      wanted = new Set(['keep-b', 'keep-c']);
      seen.length = 0;
      await f.relistNow();
      expect(
        f
          .list()
          .map((o) => o.metadata.name)
          .sort(),
      ).toEqual(['keep-b', 'keep-c']);
      expect(seen.sort()).toEqual([
        ['add', 'keep-b'],
        ['add', 'keep-c'],
        ['delete', 'keep-a'],
      ]);
      // The watch resumes after the relist: a change to an accepted object is still delivered.
      await configMap('keep-b', { v: '2' });
      await waitFor('update of keep-b', async () => seen.some(([t, n]) => t === 'update' && n === 'keep-b'), 10_000);
    } finally {
      f.stop();
    }
  }, 60_000);
});
