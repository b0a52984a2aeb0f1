import { createRouteRef, routeResolutionApiRef, useApiHolder } from '@backstage/frontend-plugin-api';
import { useMemo } from 'react';

export const rootRouteRef = createRouteRef();

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
      plans: () => `${base}/plans`,
      plan: (namespace: string, name: string) =>
        `${base}/plans/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`,
      assistant: () => `${base}/assistant`,
    };
  }, [resolver]);
}
