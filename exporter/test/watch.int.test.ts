import { kubeConfigFor, waitFor } from '@kpromo/test-harness';
import { app, crs, deleteNamespace, ensureKpromoCrds, ensureNamespace } from '@kpromo/test-harness/crs';
import type * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../src/log.js';
import { parseKind } from '../src/resourceKind.js';
import { type KubeObject, ResourceWatcher, type WatchEvent } from '../src/watchResources.js';

// ResourceWatcher alone against the real apiserver: a real 410 Gone must lead to a relist that
// reports the deletes that happened while the watch was not running.
const NS = `exp-w-${Math.random().toString(36).slice(2, 7)}`;
let kc: k8s.KubeConfig;
let watcher: ResourceWatcher;
const events: WatchEvent[] = [];
const live = new Set<string>();

describe('ResourceWatcher', () => {
  beforeAll(async () => {
    kc = kubeConfigFor('dev', inject('kubeconfig'));
    await ensureKpromoCrds(kc);
    await ensureNamespace(kc, NS);
  });
  afterAll(async () => {
    watcher?.stop();
    await deleteNamespace(kc, NS);
  });

  it('relists after 410 Gone without losing deletes', async () => {
    const api = crs(kc, NS);
    await api.create('applications', app('a1'));
    await api.create('applications', app('a2'));
    const mine = (o: KubeObject) => o.metadata.namespace === NS;
    watcher = new ResourceWatcher({
      kc,
      kind: parseKind('promotions.kpromo.dev/v1alpha1/applications'),
      log: createLogger(process.env.LOG_LEVEL ?? 'silent'),
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'synced') return;
        if (e.type === 'page') {
          for (const o of e.objects) if (mine(o)) live.add(o.metadata.name);
        } else if (mine(e.object)) {
          if (e.type === 'delete') live.delete(e.object.metadata.name);
          else live.add(e.object.metadata.name);
        }
      },
    });
    watcher.start();
    await waitFor('initial list', async () => live.has('a1') && live.has('a2'));
    const relists = watcher.relists;

    const resume = watcher.pause();
    await api.delete('applications', 'a1');
    await api.create('applications', app('a3'));
    // Resume from resourceVersion 1: long compacted away, so the apiserver answers 410 Gone.
    resume('1');
    await waitFor(
      'relist after 410',
      async () => watcher.relists > relists && !live.has('a1') && live.has('a3'),
      60_000,
    );
    expect(watcher.gone).toBeGreaterThan(0);
    expect([...live].sort()).toEqual(['a2', 'a3']);
    expect(events.some((e) => e.type === 'delete' && e.object.metadata.name === 'a1')).toBe(true);
  });
});
