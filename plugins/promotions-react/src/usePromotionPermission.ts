import { useApi } from '@backstage/frontend-plugin-api';
import { AuthorizeResult, isResourcePermission, type Permission } from '@backstage/plugin-permission-common';
import { permissionApiRef } from '@backstage/plugin-permission-react';
import { useEffect, useState } from 'react';
import { promotionsApiRef } from './api';

/**
 * Whether the user may act on all these applications. Resource permissions (approve, rollback) are
 * checked per application against its catalog entity, as the backend does; all must be allowed.
 * An empty application list checks nothing (allowed), like the backend.
 */
export function usePromotionPermission(
  permission: Permission,
  target?: { namespace: string; applications: string[] },
): { loading: boolean; allowed: boolean } {
  const permissionApi = useApi(permissionApiRef);
  const promotions = useApi(promotionsApiRef);
  const [state, setState] = useState({ loading: true, allowed: false });
  const key = target ? `${target.namespace}/${[...target.applications].sort().join(',')}` : '';

  // biome-ignore lint/correctness/useExhaustiveDependencies: key stands for target
  useEffect(() => {
    let cancelled = false;
    (async () => {
      let allowed: boolean;
      if (!isResourcePermission(permission)) {
        allowed = (await permissionApi.authorize({ permission })).result === AuthorizeResult.ALLOW;
      } else if (!target) {
        allowed = false; // a resource permission needs the applications it applies to
      } else if (!target.applications.length) {
        allowed = true; // nothing app-scoped to check (e.g. approving a rollback plan); the backend agrees
      } else {
        const apps = await promotions.listApplications({ namespace: target.namespace }).catch(() => []);
        const refs = target.applications.map(
          (name) =>
            apps.find((a) => a.name === name && a.namespace === target.namespace)?.entityRef ??
            `component:default/${name}`,
        );
        const results = await Promise.all(
          refs.map((resourceRef) => permissionApi.authorize({ permission, resourceRef })),
        );
        allowed = results.every((r) => r.result === AuthorizeResult.ALLOW);
      }
      if (!cancelled) setState({ loading: false, allowed });
    })().catch(() => !cancelled && setState({ loading: false, allowed: false }));
    return () => {
      cancelled = true;
    };
  }, [permissionApi, promotions, permission, key]);
  return state;
}
