import { parseEntityRef } from '@backstage/catalog-model';
import {
  createExternalRouteRef,
  createRouteRef,
  routeResolutionApiRef,
  useApiHolder,
  useRouteRef,
} from '@backstage/frontend-plugin-api';
import { useMemo } from 'react';

export const rootRouteRef = createRouteRef();

/** The catalog's entity page (bound to catalog.catalogEntity by default): app, user and group links. */
export const catalogEntityRouteRef = createExternalRouteRef({
  params: ['namespace', 'kind', 'name'],
  defaultTarget: 'catalog.catalogEntity',
});

/** Absolute links inside the promotions page; falls back to /promotions where the page is not mounted (tests, legacy apps). */
export function usePromotionsLinks() {
  const resolver = useApiHolder().get(routeResolutionApiRef);
  return useMemo(() => {
    let base = '/promotions';
    try {
      const f = resolver?.resolve(rootRouteRef, { sourcePath: '/' });
      if (f) base = f();
    } catch {
      // not mounted in this app
    }
    base = base.replace(/\/$/, '');
    return {
      releases: () => base || '/',
      pipeline: () => `${base}/pipeline`,
      plans: (filter?: Record<string, string | undefined>) => {
        const q = new URLSearchParams(
          Object.entries(filter ?? {}).filter((e): e is [string, string] => !!e[1]),
        ).toString();
        return `${base}/plans${q ? `?${q}` : ''}`;
      },
      plan: (namespace: string, name: string) =>
        `${base}/plans/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`,
      insights: () => `${base}/insights`,
      assistant: () => `${base}/assistant`,
      adopt: () => `${base}/adopt`,
    };
  }, [resolver]);
}

/**
 * Links to catalog entities: `entityLink('user:development/guest')` is the user's page. Where the
 * catalog is not installed (or the route not bound), the catalog's default path is used.
 */
export function useEntityLinks(): (ref: string, defaultKind?: string) => string | undefined {
  let route: ReturnType<typeof useRouteRef<{ namespace: string; kind: string; name: string }>> | undefined;
  try {
    // biome-ignore lint/correctness/useHookAtTopLevel: the hook is always called; the try only guards apps without routing
    route = useRouteRef(catalogEntityRouteRef);
  } catch {
    route = undefined;
  }
  return useMemo(
    () =>
      (ref: string, defaultKind = 'component') => {
        try {
          const e = parseEntityRef(ref, { defaultKind, defaultNamespace: 'default' });
          const params = { namespace: e.namespace, kind: e.kind.toLowerCase(), name: e.name };
          return route
            ? route(params)
            : `/catalog/${encodeURIComponent(params.namespace)}/${params.kind}/${encodeURIComponent(params.name)}`;
        } catch {
          return undefined;
        }
      },
    [route],
  );
}
