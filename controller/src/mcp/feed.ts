import type { PromotionPlan } from '@kpromo/api';
import type { ApiContext } from '../api/context.js';
import type { CacheView } from '../kube/cacheView.js';
import type { CacheEvent } from '../kube/liveCache.js';
import { applicationJson, parseUri } from './uris.js';
import { planOut } from './views.js';

/**
 * Change notifications for the MCP server, driven by the informer cache (never by polling the
 * apiserver): per-plan updates for progress, per-resource-URI updates for subscriptions (fired only
 * when the rendered resource actually changed) and list changes (a plan or application appeared or
 * went away). One feed per cache, shared by every session, request and connection.
 */
export interface ChangeFeed {
  /** Every informer update of one plan, as it happens (progress of promote/rollback). */
  onPlan(namespace: string, name: string, fn: (plan: PromotionPlan) => void): () => void;
  /** The content of a resource URI changed (debounced); the callback gets the URI. */
  onResource(uri: string, fn: (uri: string) => void): () => void;
  /** A plan or application was created or deleted in a namespace. */
  onList(fn: (resource: 'promotionplans' | 'applications', namespace: string) => void): () => void;
  /** Whether the cache emits events at all (an in-memory test cache does not). */
  readonly live: boolean;
}

interface EventSource {
  onEvent(fn: (e: CacheEvent) => void): void;
}

const hasEvents = (c: CacheView): c is CacheView & EventSource =>
  typeof (c as Partial<EventSource>).onEvent === 'function';

/** Resource re-render debounce: informer relists and rollouts produce bursts of events. */
const DEBOUNCE_MS = 150;

const feeds = new WeakMap<CacheView, ChangeFeed>();

/** The feed of a context's cache (created once per cache: the cache has no way to unsubscribe). */
export function changeFeed(ctx: ApiContext): ChangeFeed {
  let f = feeds.get(ctx.cache);
  if (!f) {
    f = createFeed(ctx);
    feeds.set(ctx.cache, f);
  }
  return f;
}

/** Resource content without what changes by itself over time (ages), for change detection. */
function fingerprint(ctx: ApiContext, uri: string): string {
  const ref = parseUri(uri);
  if (!ref) return '';
  if (ref.kind === 'plans') {
    const p = ctx.cache.getPlan(ref.namespace, ref.name);
    return p ? JSON.stringify(planOut(p)) : 'absent';
  }
  const a = applicationJson(ctx, ref.namespace, ref.name);
  if (!a) return 'absent';
  return JSON.stringify({ ...a, versions: a.versions.map(({ ageSeconds: _, ...v }) => v) });
}

function createFeed(ctx: ApiContext): ChangeFeed {
  const planListeners = new Map<string, Set<(p: PromotionPlan) => void>>();
  const resources = new Map<string, { last: string; fns: Set<(uri: string) => void> }>();
  const listListeners = new Set<(resource: 'promotionplans' | 'applications', namespace: string) => void>();
  let timer: NodeJS.Timeout | undefined;

  const recheck = () => {
    timer = undefined;
    for (const [uri, r] of resources) {
      const now = fingerprint(ctx, uri);
      if (now === r.last) continue;
      r.last = now;
      for (const fn of [...r.fns]) safe(() => fn(uri));
    }
  };
  const schedule = () => {
    if (!timer && resources.size) {
      timer = setTimeout(recheck, DEBOUNCE_MS);
      timer.unref();
    }
  };

  const live = hasEvents(ctx.cache);
  if (hasEvents(ctx.cache))
    ctx.cache.onEvent((e) => {
      if (e.kind === 'PromotionPlan') {
        const p = e.obj as unknown as PromotionPlan;
        const key = `${p.metadata.namespace ?? ''}/${p.metadata.name}`;
        for (const fn of [...(planListeners.get(key) ?? [])]) safe(() => fn(p));
      }
      if ((e.kind === 'PromotionPlan' || e.kind === 'Application') && e.type !== 'update') {
        const ns = e.obj.metadata.namespace ?? '';
        for (const fn of [...listListeners])
          safe(() => fn(e.kind === 'PromotionPlan' ? 'promotionplans' : 'applications', ns));
      }
      // Plans (arrival times), applications, environments and workloads all show in the resources.
      schedule();
    });

  return {
    live,
    onPlan(namespace, name, fn) {
      const key = `${namespace}/${name}`;
      const set = planListeners.get(key) ?? new Set();
      set.add(fn);
      planListeners.set(key, set);
      return () => {
        set.delete(fn);
        if (!set.size) planListeners.delete(key);
      };
    },
    onResource(uri, fn) {
      let r = resources.get(uri);
      if (!r) {
        r = { last: fingerprint(ctx, uri), fns: new Set() };
        resources.set(uri, r);
      }
      r.fns.add(fn);
      const entry = r;
      return () => {
        entry.fns.delete(fn);
        if (!entry.fns.size && resources.get(uri) === entry) resources.delete(uri);
      };
    },
    onList(fn) {
      listListeners.add(fn);
      return () => listListeners.delete(fn);
    },
  };
}

function safe(fn: () => void) {
  try {
    fn();
  } catch {
    // a listener's failure never stops delivery to the others
  }
}
